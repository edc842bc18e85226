import ChappieCore
import Foundation

/// The `ResponsesApiRequest` fields of openai-protocol.md §8.1, shared by the HTTP body and the
/// WebSocket's flat `response.create` frame (§8.2).
enum ResponsesRequestBody {
    /// The fields, with `prompt_cache_key` set to the client's session.
    static func fields(_ request: ChappieResponseRequest, sessionID: String) -> [String: Any] {
        var body: [String: Any] = [
            "model": request.model,
            "input": request.input.map { message in
                [
                    "type": "message", "role": message.role.rawValue,
                    "content": [["type": message.role == .assistant ? "output_text" : "input_text", "text": message.text]],
                ] as [String: Any]
            },
            "tools": request.allowsSearch ? [["type": "web_search"]] : [] as [[String: Any]],
            "tool_choice": "auto", "parallel_tool_calls": false, "store": false, "stream": true, "include": [] as [String],
            "prompt_cache_key": sessionID,
        ]
        if !request.instructions.isEmpty { body["instructions"] = request.instructions }
        let effort = request.reasoningEffort ?? (request.fastMode ? .low : nil)
        body["reasoning"] = effort.map { ["effort": $0.rawValue] as Any } ?? NSNull()
        if let tier = request.serviceTier ?? (request.fastMode ? "priority" : nil) { body["service_tier"] = tier }
        return body
    }

    /// The HTTP body.
    static func json(_ request: ChappieResponseRequest, sessionID: String) throws -> Data {
        try JSONSerialization.data(withJSONObject: fields(request, sessionID: sessionID), options: [.sortedKeys])
    }

    /// The WebSocket text frame: `{"type":"response.create", …the same fields…}`.
    static func webSocketFrame(_ request: ChappieResponseRequest, sessionID: String) throws -> String {
        var body = fields(request, sessionID: sessionID)
        body["type"] = "response.create"
        return String(decoding: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]), as: UTF8.self)
    }
}

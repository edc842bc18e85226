import ChappieCore
import Foundation

/// The `ResponsesApiRequest` fields of docs/protocol.md §8.1, shared by the HTTP body and the
/// WebSocket's flat `response.create` frame (§8.2).
enum ResponsesRequestBody {
    /// The fields, with `prompt_cache_key` set to the client's session: the request's options, the
    /// conversation so far, and the host tools' definitions.
    static func fields(_ request: ChappieResponseRequest, input: [ConversationItem], tools: [[String: Any]], sessionID: String) -> [String: Any] {
        var body: [String: Any] = [
            "model": request.model,
            "input": input.map(item),
            "tools": tools + (request.allowsSearch ? [["type": "web_search"]] : []),
            "tool_choice": "auto", "parallel_tool_calls": false, "store": false, "stream": true, "include": [] as [String],
            "prompt_cache_key": sessionID,
        ]
        if !request.instructions.isEmpty { body["instructions"] = request.instructions }
        let effort = request.reasoningEffort ?? (request.fastMode ? .low : nil)
        body["reasoning"] = effort.map { ["effort": $0.rawValue] as Any } ?? NSNull()
        if let tier = request.serviceTier ?? (request.fastMode ? "priority" : nil) { body["service_tier"] = tier }
        return body
    }

    /// One `input` item (§8.1, tool items).
    private static func item(_ item: ConversationItem) -> [String: Any] {
        switch item {
        case .message(let message):
            [
                "type": "message", "role": message.role.rawValue,
                "content": [["type": message.role == .assistant ? "output_text" : "input_text", "text": message.text]],
            ]
        case .functionCall(let call):
            ["type": "function_call", "call_id": call.callID, "name": call.name, "arguments": call.arguments]
        case .functionCallOutput(let callID, let output):
            ["type": "function_call_output", "call_id": callID, "output": output]
        }
    }

    /// The HTTP body.
    static func json(_ turn: ResponseTurn, tools: [[String: Any]], sessionID: String) throws -> Data {
        try JSONSerialization.data(
            withJSONObject: fields(turn.request, input: turn.input, tools: tools, sessionID: sessionID), options: [.sortedKeys])
    }

    /// The WebSocket text frame: `{"type":"response.create", …the same fields…}`.
    static func webSocketFrame(_ turn: ResponseTurn, tools: [[String: Any]], sessionID: String) throws -> String {
        var body = fields(turn.request, input: turn.input, tools: tools, sessionID: sessionID)
        body["type"] = "response.create"
        return String(decoding: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]), as: UTF8.self)
    }
}

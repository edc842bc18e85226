import Foundation
import HTTPTypes
import Hummingbird

/// What a route answers, before faults are applied and it becomes a Hummingbird `Response`.
struct Reply: Sendable {
    enum Body: Sendable {
        case bytes(Data)
        /// Server-sent events, written one by one (each string is one whole frame), `pause` seconds
        /// apart; an aborted stream is counted in `state`.
        case events([String], cutAfter: Int?, pause: Double, state: EmulatorState)
        /// `count` chunks of `size` bytes, `interval` apart, reporting how the transfer ended.
        case drip(count: Int, size: Int, interval: Duration, state: EmulatorState)
    }

    var status: Int
    var headers: [(String, String)]
    var body: Body

    /// A JSON reply.
    static func json(_ status: Int, _ value: JSON, headers: [(String, String)] = []) -> Reply {
        Reply(status: status, headers: [("Content-Type", "application/json")] + headers, body: .bytes(value.serialized()))
    }

    /// The error shape of the real service: `{"error":{"message","type","param","code"}}` (§3.2, §7.1).
    static func openAIError(_ status: Int, message: String, type: String = "invalid_request_error", code: String?) -> Reply {
        json(
            status,
            .object([
                (
                    "error",
                    .object([
                        ("message", .string(message)), ("type", .string(type)), ("param", .null), ("code", code.map(JSON.string) ?? .null),
                    ])
                )
            ]))
    }

    /// The OAuth error shape: `{"error":"invalid_grant","error_description":"…"}`.
    static func oauthError(_ status: Int, error: String, description: String) -> Reply {
        json(status, .object([("error", .string(error)), ("error_description", .string(description))]))
    }

    /// An empty reply with a status.
    static func empty(_ status: Int) -> Reply {
        Reply(status: status, headers: [], body: .bytes(Data()))
    }

    /// Applies a body fault (malformed or truncated); other faults are handled before routing.
    func applying(_ fault: Fault.Kind?) -> Reply {
        switch fault {
        case .malformed?:
            return Reply(
                status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Data(#"{"error": {"message": "upstream conn"#.utf8)))
        default:
            return self
        }
    }

    /// The Hummingbird response; `truncate` sends half of the body and then drops the connection.
    func response(truncate: Bool) -> Response {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        let status = HTTPResponse.Status(code: status)
        switch body {
        case .bytes(let data):
            guard truncate, data.count > 1 else {
                return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
            }
            return Response(
                status: status, headers: fields,
                body: ResponseBody(contentLength: data.count) { writer in
                    try await writer.write(ByteBuffer(bytes: data.prefix(data.count / 2)))
                    throw EmulatorDroppedConnection()
                })
        case .events(let frames, let cutAfter, let pause, let state):
            return Response(
                status: status, headers: fields,
                body: ResponseBody { writer in
                    do {
                        for (index, frame) in frames.enumerated() {
                            if pause > 0 && index > 0 { try await Task.sleep(for: .milliseconds(Int(pause * 1000))) }
                            if let cutAfter, index == cutAfter {
                                // Half of the next event, then the end of the stream (fixture responses-cut.sse).
                                try await writer.write(ByteBuffer(string: String(frame.prefix(frame.count / 2))))
                                break
                            }
                            try await writer.write(ByteBuffer(string: frame))
                        }
                        try await writer.finish(nil)
                    } catch {
                        await state.record(.streamAborted)
                        throw error
                    }
                })
        case .drip(let count, let size, let interval, let state):
            return Response(
                status: status, headers: fields,
                body: ResponseBody { writer in
                    await state.record(.started)
                    do {
                        for _ in 0..<count {
                            try await Task.sleep(for: interval)
                            try await writer.write(ByteBuffer(repeating: UInt8(ascii: "."), count: size))
                        }
                        try await writer.finish(nil)
                        await state.record(.completed)
                    } catch {
                        await state.record(.aborted)
                        throw error
                    }
                })
        }
    }
}

/// Thrown from a response body to make the server drop the connection mid-body.
struct EmulatorDroppedConnection: Error {}

/// A misbehaviour the control API asks the emulator to show on coming requests.
struct Fault: Sendable {
    enum Kind: Sendable {
        /// Answer with this status and an OpenAI-shaped error body (or the given body), with a
        /// `Retry-After` header (seconds or an HTTP date) when `retryAfter` is set.
        case status(Int, body: String?, retryAfter: String?)
        /// Wait this many seconds, then answer normally.
        case latency(Double)
        /// Wait until the control API releases held requests, then answer normally: a test can act
        /// while a request is known to be at the server, whatever the machine's speed.
        case hold
        /// Answer 200 with a body that is not JSON.
        case malformed
        /// Send the start of the real body, then drop the connection.
        case truncated
        /// Drop the connection without handling the request (as a network failure on the way would).
        case drop
        /// Stream this many SSE events, then half of the next one, then end the stream.
        case cutStream(afterEvents: Int)
        /// Stream one text delta, then `response.failed` (server_is_overloaded).
        case failStream
        /// Wait this many seconds between SSE events.
        case slowStream(Double)
        /// Replace the third event's data (SSE or WebSocket frame) with text that is not JSON.
        case badEvent
        /// Answer an SSE stream with this many bytes and no line break: one endless line.
        case endlessLine(bytes: Int)
        /// Refuse a WebSocket upgrade with this status (and an OpenAI-shaped error body).
        case refuseUpgrade(Int)
        /// Send this many WebSocket events of a turn, then close the socket; the client's replay of
        /// the turn (same `session-id`, same request) is streamed again from its start, reworded
        /// after the first word when `divergent`.
        case dropSocket(afterEvents: Int, divergent: Bool)
        /// Send this many WebSocket events of a turn, then a binary frame.
        case binaryFrame(afterEvents: Int)
        /// Answer a turn with the wrapped `websocket_connection_limit_reached` error, then close.
        case connectionLimit

        /// Which requests the kind applies to.
        var scope: Scope {
            switch self {
            case .refuseUpgrade: .webSocketUpgrade
            case .dropSocket, .binaryFrame, .connectionLimit: .webSocketTurn
            case .slowStream, .badEvent, .endlessLine: .stream
            default: .http
            }
        }
    }

    /// What a fault applies to: HTTP requests (not upgrades), WebSocket upgrades, WebSocket turns,
    /// or streamed replies over either transport.
    enum Scope: Sendable {
        case http, webSocketUpgrade, webSocketTurn, stream

        /// Whether a fault of this scope applies to a request of `scope`.
        func applies(to scope: Scope) -> Bool {
            self == scope || (self == .stream && (scope == .http || scope == .webSocketTurn))
        }
    }

    var kind: Kind
    /// Only requests whose path starts with this are affected; `nil` means every non-control path.
    var pathPrefix: String?
    /// How many more requests it affects.
    var remaining: Int
}

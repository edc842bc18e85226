/// A misbehaviour the control API asks the emulator to show on coming requests.
struct Fault: Sendable {
    enum Kind: Sendable {
        /// Answer with this status and an OpenAI-shaped error body (or the given body), with a
        /// `Retry-After` header when `retryAfter` is set.
        case status(Int, body: String?, retryAfter: Int?)
        /// Wait this many seconds, then answer normally.
        case latency(Double)
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
        /// Replace the third SSE event's data with text that is not JSON.
        case badEvent
    }

    var kind: Kind
    /// Only requests whose path starts with this are affected; `nil` means every non-control path.
    var pathPrefix: String?
    /// How many more requests it affects.
    var remaining: Int
}

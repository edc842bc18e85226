/// One event of a `text/event-stream`, as the WHATWG HTML standard's event-stream rules define it.
public struct ServerSentEvent: Sendable, Hashable {
    /// The event type: the last `event:` field's value, or `message` when there was none.
    public var type: String
    /// The `data:` fields' values joined with line feeds.
    public var data: String
    /// The last event ID in force when the event was dispatched (`id:` fields persist across events).
    public var lastEventID: String

    /// Creates an event.
    public init(type: String = "message", data: String, lastEventID: String = "") {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}

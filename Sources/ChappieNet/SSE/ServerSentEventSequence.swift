public import Foundation

/// The events of a `text/event-stream` body, decoded as its chunks arrive.
///
/// ```swift
/// let response = try await client.stream(request)
/// for try await event in response.body.serverSentEvents {
///     print(event.type, event.data)
/// }
/// ```
public struct ServerSentEventSequence<Base: AsyncSequence>: AsyncSequence where Base.Element == Data {
    /// Each element is one dispatched event.
    public typealias Element = ServerSentEvent

    private let base: Base

    /// Wraps a sequence of body chunks.
    public init(_ base: Base) {
        self.base = base
    }

    /// Creates the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(base: base.makeAsyncIterator())
    }

    /// Pulls chunks from the body and hands out the events they complete.
    public struct Iterator: AsyncIteratorProtocol {
        private var base: Base.AsyncIterator
        private var decoder = ServerSentEventDecoder()
        private var pending: [ServerSentEvent] = []
        private var pendingIndex = 0
        private var ended = false

        init(base: Base.AsyncIterator) {
            self.base = base
        }

        /// The next event, or `nil` at the end of the body (an incomplete last event is discarded).
        ///
        /// - Throws: ``ChappieHTTPClientError`` `.responseTooLarge` past the decoder's limit on a
        ///   line or an event (the body is not read further); the body's own errors.
        public mutating func next() async throws -> ServerSentEvent? {
            while pendingIndex == pending.count {
                guard !ended else { return nil }
                if decoder.exceededLimit {
                    ended = true
                    throw ChappieHTTPClientError(
                        code: .responseTooLarge, message: "an event stream line or event is longer than \(decoder.maximumBytes >> 20) MiB")
                }
                guard let chunk = try await base.next() else {
                    ended = true
                    decoder.finish()
                    return nil
                }
                pending = decoder.decode(chunk)
                pendingIndex = 0
            }
            defer { pendingIndex += 1 }
            return pending[pendingIndex]
        }
    }
}

extension ServerSentEventSequence: Sendable where Base: Sendable {}

extension AsyncSequence where Element == Data {
    /// This body's chunks decoded as server-sent events.
    public var serverSentEvents: ServerSentEventSequence<Self> {
        ServerSentEventSequence(self)
    }
}

public import Foundation

/// The body of a streamed response, chunk by chunk as the network delivers it.
///
/// Iteration throws ``ChappieHTTPClientError`` when the transfer fails part-way (idle timeout, dropped
/// connection) and `CancellationError` when the iterating task is cancelled, so a cut body is never
/// mistaken for a complete one. Dropping the stream, or cancelling, stops the transfer.
public struct ChappieHTTPBodyStream: AsyncSequence, Sendable {
    /// Each element is one chunk of bytes.
    public typealias Element = Data

    private let chunks: AsyncThrowingStream<Data, any Error>

    init(_ chunks: AsyncThrowingStream<Data, any Error>) {
        self.chunks = chunks
    }

    /// Creates the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(base: chunks.makeAsyncIterator())
    }

    /// Hands out the chunks; see ``ChappieHTTPBodyStream`` for how it ends.
    public struct Iterator: AsyncIteratorProtocol {
        private var base: AsyncThrowingStream<Data, any Error>.AsyncIterator

        init(base: AsyncThrowingStream<Data, any Error>.AsyncIterator) {
            self.base = base
        }

        /// The next chunk, or `nil` once the whole body has arrived.
        public mutating func next() async throws -> Data? {
            guard let chunk = try await base.next() else {
                // A stream ended by cancellation returns nil: report it as what it is.
                try Task.checkCancellation()
                return nil
            }
            return chunk
        }
    }
}

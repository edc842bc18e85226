public import Foundation

/// A response whose body has been read in full.
public struct ChappieHTTPResponse: Sendable {
    /// The status code, for example 200.
    public var status: Int
    /// The header fields of the final response (not of interim `1xx` responses).
    public var headers: ChappieHTTPHeaders
    /// The body.
    public var body: Data

    /// Creates a response.
    public init(status: Int, headers: ChappieHTTPHeaders, body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Whether the status is in the 2xx range.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// A response whose head has arrived and whose body arrives as a stream of chunks.
///
/// Stop iterating `body` (or cancel the task that iterates it) to stop the transfer.
public struct ChappieHTTPStreamingResponse: Sendable {
    /// The status code, for example 200.
    public var status: Int
    /// The header fields of the final response.
    public var headers: ChappieHTTPHeaders
    /// The body, chunk by chunk, as the network delivers it.
    public var body: ChappieHTTPBodyStream

    /// Creates a streaming response.
    public init(status: Int, headers: ChappieHTTPHeaders, body: ChappieHTTPBodyStream) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Whether the status is in the 2xx range.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

public import Foundation

/// A response whose body has been read in full.
public struct HTTPResponse: Sendable {
    /// The status code, for example 200.
    public var status: Int
    /// The header fields of the final response (not of interim `1xx` responses).
    public var headers: HTTPHeaders
    /// The body.
    public var body: Data

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders, body: Data) {
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
public struct HTTPStreamingResponse: Sendable {
    /// The status code, for example 200.
    public var status: Int
    /// The header fields of the final response.
    public var headers: HTTPHeaders
    /// The body, chunk by chunk, as the network delivers it.
    public var body: HTTPBodyStream

    /// Creates a streaming response.
    public init(status: Int, headers: HTTPHeaders, body: HTTPBodyStream) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Whether the status is in the 2xx range.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

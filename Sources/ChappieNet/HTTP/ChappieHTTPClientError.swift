/// A failure of an HTTP exchange that happened before or instead of a response.
///
/// A response with an error status (404, 500, …) is not an `ChappieHTTPClientError`: it is returned as a
/// response. Descriptions name the host and path, never headers or bodies, so they carry no secret.
///
/// ```swift
/// do {
///     _ = try await client.execute(request)
/// } catch let error as ChappieHTTPClientError where error.code == .timedOut {
///     // try again later
/// }
/// ```
public struct ChappieHTTPClientError: Error, Sendable, CustomStringConvertible {
    /// What to do when a certificate does not verify: chappie never skips verification.
    static let trustAdvice =
        "If a proxy or your company's certificate authority signs that server's certificate, trust it with --ca-file FILE (or CHAPPIE_CA_FILE); SSL_CERT_FILE replaces the system's authorities"

    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case invalidURL = "invalid URL"
            case insecureAuthorization = "credentials over plain http"
            case resolveFailed = "host not found"
            case proxyFailed = "proxy failed"
            case connectFailed = "could not connect"
            case tlsFailed = "TLS failed"
            case timedOut = "timed out"
            case connectionLost = "connection lost"
            case responseTooLarge = "response too large"
            case transferFailed = "transfer failed"
            case libraryUnavailable = "libcurl unavailable"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The URL is not an absolute `http` or `https` URL.
        public static let invalidURL = Code(.invalidURL)
        /// An `Authorization` header was to go over plain http to a host that is not loopback.
        public static let insecureAuthorization = Code(.insecureAuthorization)
        /// The host name could not be resolved.
        public static let resolveFailed = Code(.resolveFailed)
        /// The proxy could not be resolved, reached or used.
        public static let proxyFailed = Code(.proxyFailed)
        /// No connection could be made (refused, unreachable, or the connect timeout passed).
        public static let connectFailed = Code(.connectFailed)
        /// The TLS handshake or the certificate check failed.
        public static let tlsFailed = Code(.tlsFailed)
        /// No byte arrived within the idle timeout, or the total timeout passed.
        public static let timedOut = Code(.timedOut)
        /// The connection closed or broke before the response was complete.
        public static let connectionLost = Code(.connectionLost)
        /// A buffered response body was larger than the client accepts.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// Any other failure reported by libcurl.
        public static let transferFailed = Code(.transferFailed)
        /// libcurl is not installed (or too old), so no request can be made.
        public static let libraryUnavailable = Code(.libraryUnavailable)

        /// A short name of the code.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// A human-readable explanation that is safe to show (no headers, no bodies).
    public let message: String
    /// The libcurl result code, when libcurl reported the failure.
    public let curlCode: Int?

    /// Creates an error.
    public init(code: Code, message: String, curlCode: Int? = nil) {
        self.code = code
        self.message = message
        self.curlCode = curlCode
    }

    /// Whether trying the same request again later could succeed.
    public var isTransient: Bool {
        switch code {
        case .invalidURL, .insecureAuthorization, .responseTooLarge, .tlsFailed, .libraryUnavailable: false
        default: true
        }
    }

    /// Whether `text` holds the description of a TLS failure, as errors that keep only text
    /// (``ChappieCore/ChappieAuthError/networkFailure(_:)``) carry it: a certificate that does not
    /// verify will not verify on a retry either, and the command line says so.
    public static func describesTLSFailure(_ text: String) -> Bool {
        text.contains("\(Code.tlsFailed.description): ")
    }

    /// The message, prefixed by the code unless it starts with it.
    public var description: String { message.hasPrefix(code.description) ? message : "\(code): \(message)" }
}

public import ChappieCore

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
public struct ChappieHTTPClientError: Error, Sendable, CustomStringConvertible, ChappieRecoverableError {
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
            case certificateRejected = "certificate rejected"
            case untrustedFile = "certificate file unusable"
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
        /// The TLS handshake failed (a reset, no common cipher): not the certificate.
        public static let tlsFailed = Code(.tlsFailed)
        /// The server's certificate did not verify against the trusted authorities, or names
        /// another host: retrying will not help; trusting the right authority may.
        public static let certificateRejected = Code(.certificateRejected)
        /// A certificate file chappie was told to trust cannot be read or holds no certificate.
        public static let untrustedFile = Code(.untrustedFile)
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
        case .invalidURL, .insecureAuthorization, .responseTooLarge, .certificateRejected, .untrustedFile, .libraryUnavailable: false
        default: true
        }
    }

    /// What to do about it: retry a transient failure; fix the configuration for a bad URL, plain
    /// http or a certificate; libcurl missing is this machine's limitation.
    public var recovery: ChappieErrorRecovery {
        switch code {
        case .invalidURL, .insecureAuthorization, .certificateRejected, .untrustedFile: .permanent(.fixConfiguration)
        case .libraryUnavailable: .permanent(.platformLimitation)
        case .responseTooLarge: .permanent(.inspectCause)
        default: .retry(.now)
        }
    }

    /// The code of the error whose ``description`` `text` is, when it is one of the two that are
    /// not the service's doing: a rejected certificate or an unusable certificate file. For the
    /// errors that keep only a client error's text (``ChappieCore/ChappieAuthError/networkFailure(_:)``):
    /// a description starts with its code, and no server text comes before it.
    public static func trustCode(describedBy text: String) -> Code? {
        guard ChappieTLSTrust.isTrustFailure(text) else { return nil }
        return [Code.certificateRejected, .untrustedFile].first { text.hasPrefix("\($0.description): ") }
    }

    /// The message, prefixed by the code unless it starts with it.
    public var description: String { message.hasPrefix(code.description) ? message : "\(code): \(message)" }
}

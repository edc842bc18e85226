public import Foundation

/// An HTTP request to send with ``ChappieHTTPClient``.
///
/// ```swift
/// var request = ChappieHTTPRequest(url: URL(string: "https://auth.openai.com/oauth/token")!, method: .post)
/// request.headers["Content-Type"] = "application/json"
/// request.body = Data(#"{"grant_type":"refresh_token"}"#.utf8)
/// ```
public struct ChappieHTTPRequest: Sendable {
    /// The absolute `http` or `https` URL.
    public var url: URL
    /// The method; `GET` unless set.
    public var method: ChappieHTTPMethod
    /// The header fields to send. `User-Agent` defaults to the client's.
    public var headers: ChappieHTTPHeaders
    /// The body to send, if any.
    public var body: Data?
    /// The longest wait for the next byte of the response, overriding the client's idle timeout.
    public var idleTimeout: Duration?
    /// The longest the whole exchange may take; `nil` means no limit beyond the idle timeout.
    public var totalTimeout: Duration?
    /// Whether the body carries a credential (a refresh token, an authorization code, a token to
    /// revoke): such a request, like one with `Authorization`, is refused over plain http except to
    /// loopback.
    public var bodyCarriesCredentials: Bool
    /// Whether the request goes straight to its host, whatever proxy the environment or the
    /// client names: a plain-http request to this machine (an alert webhook on loopback) must not
    /// leave it in clear through a proxy. Default: `false`.
    public var bypassesProxy = false
    /// Whether the URL's path and query are a secret (a webhook's: ntfy, Slack and Discord keep
    /// theirs there): logs and errors then name the scheme, host and port only. Default: `false`.
    public var pathIsSecret = false

    /// The request's host, port and path as logs and errors show them (never the query, which
    /// may carry a code; no path at all when ``pathIsSecret``).
    var redactedTarget: String {
        guard pathIsSecret else { return url.redactedTarget }
        let host = url.host ?? "?"
        return "\(host)\(url.port.map { ":\($0)" } ?? "")/…"
    }

    /// Creates a request.
    ///
    /// - Parameters:
    ///   - url: The absolute `http` or `https` URL.
    ///   - method: The method; `GET` by default.
    ///   - headers: The header fields; none by default.
    ///   - body: The body; none by default.
    public init(url: URL, method: ChappieHTTPMethod = .get, headers: ChappieHTTPHeaders = [:], body: Data? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.idleTimeout = nil
        self.totalTimeout = nil
        self.bodyCarriesCredentials = false
    }
}

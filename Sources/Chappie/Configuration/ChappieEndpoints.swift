package import ChappieNet
public import ChappieCore
public import Foundation

/// The two services chappie talks to: the OAuth issuer and the ChatGPT backend.
///
/// The defaults are the real ones (`https://auth.openai.com`, `https://chatgpt.com/backend-api`);
/// tests and `make demo` point both at the emulator.
///
/// ```swift
/// let endpoints = try ChappieEndpoints(issuer: "http://127.0.0.1:8080", backend: "http://127.0.0.1:8080/backend-api")
/// endpoints.tokenURL  // http://127.0.0.1:8080/oauth/token
/// ```
public struct ChappieEndpoints: Sendable, Equatable {
    /// The real OAuth issuer.
    public static let defaultIssuer = URL(string: "https://auth.openai.com")!
    /// The real ChatGPT backend.
    public static let defaultBackend = URL(string: "https://chatgpt.com/backend-api")!

    /// The issuer's base URL, without a trailing slash.
    public let issuer: URL
    /// The backend's base URL, ending in `/backend-api`.
    public let backend: URL
    /// The `originator` header chappie's own backend requests carry (usage polls, Responses
    /// turns): how it names itself to the service, never as the Codex CLI. Default: `chappie`.
    /// The browser sign-in keeps the one its OAuth client is registered with (docs/protocol.md §2).
    public var originator = Self.defaultOriginator

    /// The `originator` chappie sends unless told otherwise.
    public static let defaultOriginator = "chappie"

    /// Whether `value` may be sent as the `originator`: 1 to 64 ASCII letters, digits, `_`, `-`
    /// and `.` (a header value that cannot carry anything else).
    public static func isValidOriginator(_ value: String) -> Bool {
        (1...64).contains(value.count) && value.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) }
    }
    /// The certificate authorities chappie's connections to both services trust. Default: the
    /// environment's (`SSL_CERT_FILE`, `CHAPPIE_CA_FILE`, else the system's).
    public var trust = ChappieTLSTrust.environment

    /// A client for these services: HTTPS trusting ``trust``.
    package func httpClient(_ configuration: ChappieHTTPClientConfiguration = ChappieHTTPClientConfiguration()) -> ChappieHTTPClient {
        var configuration = configuration
        configuration.trust = trust
        return ChappieHTTPClient(configuration: configuration)
    }

    /// The real service's endpoints.
    public init() {
        issuer = Self.defaultIssuer
        backend = Self.defaultBackend
    }

    /// Endpoints from user-supplied base URLs; `nil` keeps the default.
    ///
    /// - Throws: ``ChappieEndpointError`` when a URL is not absolute http(s), or is plain http to a
    ///   host that is not loopback (tokens would travel in clear).
    public init(issuer: String?, backend: String?) throws(ChappieEndpointError) {
        self.issuer = if let issuer { try Self.parse(issuer, option: "--issuer") } else { Self.defaultIssuer }
        var backendURL = if let backend { try Self.parse(backend, option: "--backend") } else { Self.defaultBackend }
        // A bare chatgpt.com base is normalised to include /backend-api, as Codex does (§6.1).
        if backendURL.path.isEmpty || backendURL.path == "/" {
            backendURL = backendURL.appendingPathComponent("backend-api")
        }
        self.backend = backendURL
    }

    /// The OIDC discovery document, which `chappie doctor` reads to see that the issuer answers.
    public var discoveryURL: URL { issuer.appendingPathComponent(".well-known/openid-configuration") }
    /// `POST` here to start a device-code sign-in.
    public var deviceUserCodeURL: URL { issuer.appendingPathComponent("api/accounts/deviceauth/usercode") }
    /// `POST` here to poll a device code.
    public var deviceTokenURL: URL { issuer.appendingPathComponent("api/accounts/deviceauth/token") }
    /// Where the user enters the device code.
    public var deviceVerificationURL: URL { issuer.appendingPathComponent("codex/device") }
    /// The token endpoint (code exchange and refresh).
    public var tokenURL: URL { issuer.appendingPathComponent("oauth/token") }
    /// `GET /oauth/authorize`, the browser sign-in's first page.
    public var authorizeURL: URL { issuer.appendingPathComponent("oauth/authorize") }
    /// The revocation endpoint.
    public var revokeURL: URL { issuer.appendingPathComponent("oauth/revoke") }
    /// The usage-limit windows of an account.
    public var usageURL: URL { backend.appendingPathComponent("wham/usage") }
    /// `GET …/wham/rate-limit-reset-credits`: an account's banked resets (docs/protocol.md, "Reset credits").
    public var resetCreditsURL: URL { backend.appendingPathComponent("wham/rate-limit-reset-credits") }
    /// `POST …/wham/rate-limit-reset-credits/consume`: redeems one.
    public var consumeResetCreditURL: URL { backend.appendingPathComponent("wham/rate-limit-reset-credits/consume") }
    /// `GET …/wham/profiles/me`: an account's tokens per day (docs/protocol.md §8.4).
    public var profileURL: URL { backend.appendingPathComponent("wham/profiles/me") }
    /// Workspace routing discovery: where an account's Responses requests go.
    public var accountCheckURL: URL { backend.appendingPathComponent("wham/accounts/check") }
    /// The streaming Responses endpoint.
    public var responsesURL: URL { backend.appendingPathComponent("codex/responses") }
    /// The same endpoint for WebSocket: `wss://` for an `https` backend, `ws://` for (loopback) `http`.
    public var responsesWebSocketURL: URL {
        var components = URLComponents(url: responsesURL, resolvingAgainstBaseURL: false)
        components?.scheme = responsesURL.scheme?.lowercased() == "http" ? "ws" : "wss"
        return components?.url ?? responsesURL
    }

    private static func parse(_ text: String, option: String) throws(ChappieEndpointError) -> URL {
        var trimmed = text.trimmingCharacters(in: .whitespaces)
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil, url.user == nil
        else {
            throw .invalidURL(option: option, value: text)
        }
        if scheme == "http" && !ChappieHTTPClient.isLoopback(host: host) {
            throw .insecureURL(option: option, host: host)
        }
        return url
    }
}

/// A base URL given on the command line or in a configuration cannot be used.
public enum ChappieEndpointError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError, ChappieRecoverableError {
    /// Not an absolute http(s) URL without query, fragment or user info.
    case invalidURL(option: String, value: String)
    /// Plain http to a host that is not this machine.
    case insecureURL(option: String, host: String)

    /// A URL is configured wrongly: fix it.
    public var recovery: ChappieErrorRecovery { .permanent(.fixConfiguration) }

    /// What is wrong and how to fix it (as ``description``).
    public var errorDescription: String? { description }

    /// What is wrong and how to fix it.
    public var description: String {
        switch self {
        case .invalidURL(let option, let value):
            "\(option) must be an absolute http(s) URL such as https://auth.openai.com, not \"\(value)\""
        case .insecureURL(let option, let host):
            "\(option) uses plain http to \(host): tokens would travel unencrypted. Use https (plain http is only for loopback)"
        }
    }
}

public import ChappieCore

/// How an ``ChappieHTTPClient`` connects and how long it waits.
///
/// ```swift
/// var configuration = ChappieHTTPClientConfiguration()
/// configuration.connectTimeout = .seconds(5)
/// let client = ChappieHTTPClient(configuration: configuration)
/// ```
public struct ChappieHTTPClientConfiguration: Sendable {
    /// The longest a connection (including TLS) may take to set up. Default: 10 seconds.
    public var connectTimeout: Duration
    /// The longest the client waits for the next byte of a response before failing with
    /// ``ChappieHTTPClientError/Code/timedOut``. Whole seconds; default: 60 seconds. A request can override it.
    public var idleTimeout: Duration
    /// The `User-Agent` sent when a request sets none. Default: `chappie/<version> (<os>; <arch>)`.
    public var userAgent: String
    /// A proxy URL for every request, such as `http://proxy.internal:3128`. Default `nil`: libcurl's
    /// environment rules apply (`https_proxy`/`HTTPS_PROXY`, `http_proxy`, `ALL_PROXY`).
    public var proxy: String?
    /// Hosts reached without the proxy, comma-separated (`localhost,.internal`). Default `nil`:
    /// `NO_PROXY`/`no_proxy` from the environment apply.
    public var noProxy: String?
    /// The largest body ``ChappieHTTPClient/execute(_:)`` buffers. Default: 32 MiB.
    public var maximumBufferedBodySize: Int
    /// The certificate authorities HTTPS trusts. Default: the environment's
    /// (``ChappieTLSTrust/environment``: `SSL_CERT_FILE`, `CHAPPIE_CA_FILE`, else the system's).
    public var trust: ChappieTLSTrust

    /// Creates a configuration; every parameter has the default documented on its property.
    public init(
        connectTimeout: Duration = .seconds(10),
        idleTimeout: Duration = .seconds(60),
        userAgent: String = ChappieVersion.userAgent,
        proxy: String? = nil,
        noProxy: String? = nil,
        maximumBufferedBodySize: Int = 32 << 20,
        trust: ChappieTLSTrust = .environment
    ) {
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.userAgent = userAgent
        self.proxy = proxy
        self.noProxy = noProxy
        self.maximumBufferedBodySize = maximumBufferedBodySize
        self.trust = trust
    }
}

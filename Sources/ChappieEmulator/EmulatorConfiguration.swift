/// How an ``Emulator`` listens and behaves.
///
/// ```swift
/// var configuration = EmulatorConfiguration()
/// configuration.accessTokenLifetime = .seconds(30)
/// let emulator = Emulator(configuration: configuration)
/// ```
public struct EmulatorConfiguration: Sendable {
    /// The address to listen on. Default `127.0.0.1`; keep it on loopback.
    public var host: String
    /// The port; 0 (the default) lets the system choose a free one.
    public var port: Int
    /// How long an access token is valid (its JWT `exp`). Default: 1 hour.
    public var accessTokenLifetime: Duration
    /// How long an unused refresh token stays redeemable. Default: 30 days.
    public var refreshTokenLifetime: Duration
    /// How long a device code can be approved and polled. Default: 15 minutes, as the real service.
    public var deviceCodeLifetime: Duration
    /// The polling interval in seconds that the usercode reply asks for. Default: 5, as the real service.
    public var deviceCodePollInterval: Int
    /// Approve every device code by itself, as a new account, after ``autoApproveDelay``. Default: off.
    public var autoApprove: Bool
    /// How long after its creation an auto-approved device code becomes approved. Default: 2 seconds.
    public var autoApproveDelay: Duration
    /// Percentage points of the 5-hour window each streamed response uses. Default: 2.
    public var primaryCostPerResponse: Double
    /// Percentage points of the weekly window each streamed response uses. Default: 0.5.
    public var secondaryCostPerResponse: Double
    /// Serve HTTPS and `wss` with these certificates instead of plain HTTP. Default: none.
    public var tls: EmulatorTLS?

    /// Creates a configuration; every parameter has the default documented on its property.
    public init(
        host: String = "127.0.0.1",
        port: Int = 0,
        accessTokenLifetime: Duration = .seconds(3600),
        refreshTokenLifetime: Duration = .seconds(30 * 86400),
        deviceCodeLifetime: Duration = .seconds(900),
        deviceCodePollInterval: Int = 5,
        autoApprove: Bool = false,
        autoApproveDelay: Duration = .seconds(2),
        primaryCostPerResponse: Double = 2,
        secondaryCostPerResponse: Double = 0.5,
        tls: EmulatorTLS? = nil
    ) {
        self.host = host
        self.port = port
        self.accessTokenLifetime = accessTokenLifetime
        self.refreshTokenLifetime = refreshTokenLifetime
        self.deviceCodeLifetime = deviceCodeLifetime
        self.deviceCodePollInterval = deviceCodePollInterval
        self.autoApprove = autoApprove
        self.autoApproveDelay = autoApproveDelay
        self.primaryCostPerResponse = primaryCostPerResponse
        self.secondaryCostPerResponse = secondaryCostPerResponse
        self.tls = tls
    }

    /// `https` with ``tls``, else `http`.
    public var scheme: String { tls == nil ? "http" : "https" }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

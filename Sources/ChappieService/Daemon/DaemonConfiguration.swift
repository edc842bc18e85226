public import Foundation

/// How `chappie daemon` schedules its work.
public struct DaemonConfiguration: Sendable {
    /// Refresh an account this long before its access token expires. Default: 10 minutes.
    ///
    /// Keep it above ``codexRefreshWindow``: a running Codex CLI refreshes on its own within that
    /// window of its token's expiry, and two refreshers in the same window can redeem one refresh
    /// token twice (Codex takes no lock). Refreshing earlier, chappie writes the new tokens into the
    /// Codex home first, and Codex adopts them instead of redeeming its own.
    public var refreshMargin: Duration

    /// How long before its access token's expiry the Codex CLI (0.13x and later) refreshes by itself.
    public static let codexRefreshWindow = Duration.seconds(300)

    /// Why this configuration may hurt a running Codex, if it may: a refresh margin inside
    /// ``codexRefreshWindow``.
    public var codexRaceWarning: String? {
        guard refreshMargin <= Self.codexRefreshWindow else { return nil }
        return
            "a refresh margin of \(refreshMargin.components.seconds) s is inside the 5 minutes before expiry in which a running Codex refreshes by itself: both may redeem the same refresh token, and the account would have to sign in again. Keep --refresh-margin above 5m (the default is 10m) while Codex runs with these accounts"
    }
    /// Poll an account's usage when its latest reading (whoever stored it) is this old. Default: 10 minutes.
    public var pollInterval: Duration
    /// Poll it this often once its binding window is at ``nearLimitPercent`` or more. Default: 60 seconds.
    public var nearLimitPollInterval: Duration
    /// The use from which ``nearLimitPollInterval`` applies, in percent. Default: 80.
    public var nearLimitPercent: Double
    /// How often the daemon looks at the readings in the store (its own and other processes'),
    /// which is how soon auto-switch takes up a limit another command saw. Default: 5 seconds.
    public var watchInterval: Duration
    /// Switch away from the active account when it reaches its limit. Default: off.
    public var autoSwitch: Bool
    /// Whether auto-switch may move to an account of another workspace kind (``WorkspaceKind``)
    /// than the one it leaves. Default: false.
    public var autoSwitchAnyKind = false
    /// Whether alerts follow every reading stored, whichever process stored it (`usage poll`, `ask`,
    /// Codex's rollouts), rather than only this daemon's polls. Set for a store of this machine.
    var alertsOnEveryReading = false
    /// Where auto-switch exports the new account for the Codex CLI (else the codex-home setting).
    public var codexHome: URL?
    /// The socket of the local API.
    public var socket: URL
    /// How many accounts are refreshed or polled at once. Default: 8.
    public var concurrency: Int
    /// The wait after an account's first failure; it doubles with each further one. Default: 30 seconds.
    public var initialBackoff: Duration
    /// The longest wait after repeated failures of one account. Default: 30 minutes.
    public var maximumBackoff: Duration
    /// The longest the scheduler sleeps before looking at the accounts again. Default: 60 seconds.
    public var rescanInterval: Duration
    /// How long a socket client may take to send its request line, and to take its reply, before
    /// the daemon closes the connection. Default: 10 seconds.
    public var requestTimeout: Duration
    /// Where `/metrics` and the dashboard are served over HTTP, if anywhere. Default: nowhere (the
    /// socket's `metrics` command answers either way).
    public var metrics: MetricsListener?
    /// The zone the dashboard writes times in. Default: the system's.
    public var timeZone: TimeZone
    /// Where alerts go, and the thresholds that fire them. Default: nowhere.
    public var alerts: AlertTargets
    /// The first wait before a failed webhook is tried again; it doubles each time. Default: 10 seconds.
    public var alertRetryDelay: Duration
    /// Redeem a banked reset credit when an account reaches its limit (`--auto-redeem`). Default: off.
    public var autoRedeem: Bool

    /// How often the poll loop and auto-switch look at the store: the watch interval, or the
    /// shortest poll interval when that is shorter (a test's 1-second polls), and never under 100 ms.
    var watchTick: Duration {
        max(.milliseconds(100), min(watchInterval, pollInterval, nearLimitPollInterval))
    }

    /// Creates a configuration; every parameter has the default documented on its property.
    public init(
        socket: URL, refreshMargin: Duration = .seconds(600), pollInterval: Duration = .seconds(600), autoSwitch: Bool = false,
        codexHome: URL? = nil, concurrency: Int = 8, initialBackoff: Duration = .seconds(30), maximumBackoff: Duration = .seconds(1800),
        rescanInterval: Duration = .seconds(60), requestTimeout: Duration = .seconds(10), metrics: MetricsListener? = nil,
        timeZone: TimeZone = .current, nearLimitPollInterval: Duration = .seconds(60), nearLimitPercent: Double = 80,
        watchInterval: Duration = .seconds(5), alerts: AlertTargets = AlertTargets(), alertRetryDelay: Duration = .seconds(10),
        autoRedeem: Bool = false
    ) {
        self.alerts = alerts
        self.alertRetryDelay = alertRetryDelay
        self.autoRedeem = autoRedeem
        self.nearLimitPollInterval = nearLimitPollInterval
        self.nearLimitPercent = nearLimitPercent
        self.watchInterval = watchInterval
        self.metrics = metrics
        self.timeZone = timeZone
        self.requestTimeout = requestTimeout
        self.initialBackoff = initialBackoff
        self.socket = socket
        self.refreshMargin = refreshMargin
        self.pollInterval = pollInterval
        self.autoSwitch = autoSwitch
        self.codexHome = codexHome
        self.concurrency = concurrency
        self.maximumBackoff = maximumBackoff
        self.rescanInterval = rescanInterval
    }
}

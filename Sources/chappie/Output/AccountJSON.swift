import ChappieCore
import ChappieService
import Foundation

/// The account object: the one shape an account has in every `--json` output (docs/json.md).
/// Never a token.
struct AccountJSON: Encodable {
    var name: String
    var email: String?
    var plan: String?
    var planName: String?
    var chatgptAccountID: String?
    var chatgptUserID: String?
    var fedramp: Bool
    var status: String
    var active: Bool
    var accessTokenExpiresAt: Date?
    var lastRefreshAt: Date?
    var lastError: String?
    var codexHome: String?
    /// `ok` or `unreadable` once the sealed credentials were tried; absent when they were not.
    var credentials: String?
    var credentialProblem: String?
    var createdAt: Date
    var reservePercent: Double?
    var maxLeases: Int
    /// Whether auto-switch, `--best`, failover and leases may choose it by themselves.
    var autoSwitch: Bool
    /// Its order among those: higher first.
    var priority: Int
    var usage: UsageJSON?

    /// The account, its credentials checked or not (`problem`: why they do not open).
    init(_ account: Account, checked: Bool = false, problem: String? = nil, usage: UsageSample? = nil) {
        name = account.name.rawValue
        email = account.info.email
        plan = account.info.plan?.rawValue
        planName = account.info.plan?.displayName
        chatgptAccountID = account.info.accountID
        chatgptUserID = account.info.userID
        fedramp = account.info.isFedRAMPAccount
        status = account.status.rawValue
        active = account.isActive
        maxLeases = account.maxLeases
        autoSwitch = account.autoSwitch
        priority = account.priority
        accessTokenExpiresAt = account.accessTokenExpiresAt
        lastRefreshAt = account.lastRefreshAt
        lastError = account.lastError
        codexHome = account.codexHome
        credentials = checked ? (problem == nil ? "ok" : "unreadable") : nil
        credentialProblem = problem
        createdAt = account.createdAt
        reservePercent = account.reservePercent
        self.usage = usage.map { UsageJSON($0, reserve: account.reservePercent) }
    }

    /// An account whose credentials were checked (``AccountsService/Summary``).
    init(_ summary: AccountsService.Summary, usage: UsageSample? = nil) {
        self.init(summary.account, checked: true, problem: summary.credentialProblem, usage: usage)
    }
}

/// The usage object: an account's newest reading with its effective headroom.
struct UsageJSON: Encodable {
    var observedAt: Date
    var fiveHour: WindowJSON?
    var weekly: WindowJSON?
    /// `5h` or `weekly`: the window that limits first.
    var bindingWindow: String?
    /// 100 (or the reserve) minus the binding window's used percent, never below 0.
    var headroom: Double
    var nextResetAt: Date?
    var limitReached: Bool
    /// With `usage --forecast`: when each window runs out at the recent rate.
    var fiveHourRunsOutAt: Date?
    var weeklyRunsOutAt: Date?

    init(_ sample: UsageSample, reserve: Double?) {
        let snapshot = sample.snapshot
        observedAt = sample.observedAt
        fiveHour = snapshot.shortWindow.map(WindowJSON.init)
        weekly = snapshot.longWindow.map(WindowJSON.init)
        let headroom = Headroom(snapshot, reservePercent: reserve)
        bindingWindow = headroom.bindingWindow?.rawValue
        self.headroom = headroom.percent
        nextResetAt = [snapshot.shortWindow?.resetsAt, snapshot.longWindow?.resetsAt].compactMap { $0 }.min()
        limitReached = snapshot.limitReached
    }
}

/// The window object: one usage window (5-hour or weekly).
struct WindowJSON: Encodable {
    var usedPercent: Double
    var resetsAt: Date?
    var windowMinutes: Int?
    /// 100 minus the used percent, never below 0.
    var headroom: Double

    init(_ window: ChappieUsageWindow) {
        usedPercent = window.usedPercent
        resetsAt = window.resetsAt
        windowMinutes = window.windowMinutes
        headroom = max(0, 100 - window.usedPercent)
    }
}

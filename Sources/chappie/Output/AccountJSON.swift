import ChappieCore
import ChappieService
import Foundation

/// An account as `--json` prints it: never a token.
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
    var credentials: String
    var credentialProblem: String?
    var createdAt: Date
    var reservePercent: Double?
    var maxLeases: Int
    var usage: UsageJSON?

    init(_ summary: AccountsService.Summary) {
        let account = summary.account
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
        accessTokenExpiresAt = account.accessTokenExpiresAt
        lastRefreshAt = account.lastRefreshAt
        lastError = account.lastError
        codexHome = account.codexHome
        credentials = summary.credentialProblem == nil ? "ok" : "unreadable"
        credentialProblem = summary.credentialProblem
        createdAt = account.createdAt
        reservePercent = account.reservePercent
    }
}

/// An account's newest usage reading, with its effective headroom, as `--json` and tables show it.
struct UsageJSON: Encodable {
    var observedAt: Date
    var fiveHour: ChappieUsageWindow?
    var weekly: ChappieUsageWindow?
    /// `5h` or `weekly`: the window that limits first.
    var bindingWindow: String?
    /// 100 (or the reserve) minus the binding window's used percent, never below 0.
    var headroomPercent: Double
    var nextReset: Date?
    var limitReached: Bool

    init(_ sample: UsageSample, reserve: Double?) {
        let snapshot = sample.snapshot
        observedAt = sample.observedAt
        fiveHour = snapshot.shortWindow
        weekly = snapshot.longWindow
        let headroom = Headroom(snapshot, reservePercent: reserve)
        bindingWindow = headroom.bindingWindow?.rawValue
        headroomPercent = headroom.percent
        nextReset = [snapshot.shortWindow?.resetsAt, snapshot.longWindow?.resetsAt].compactMap { $0 }.min()
        limitReached = snapshot.limitReached
    }
}

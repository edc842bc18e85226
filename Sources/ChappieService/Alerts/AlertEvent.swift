public import ChappieCore
public import Foundation

/// One alert: what happened to which account, as the webhook body and the alert command's input
/// carry it (docs/operations.md, "Alerts"). It never holds a token.
public struct AlertEvent: Sendable, Equatable {
    /// What happened.
    public enum Kind: String, Sendable, CaseIterable {
        /// A window's use went up past one of the `--alert-at` thresholds.
        case threshold
        /// A window that was at its limit started afresh.
        case reset
        /// The account must be signed in again.
        case signinRequired = "signin_required"
        /// The daemon's auto-switch moved the active account.
        case switched
        /// A job was resumed as another account (`--failover`).
        case failover
        /// An account at its limit has a banked reset credit.
        case creditAvailable = "credit_available"
    }

    public var event: Kind
    /// The account's name (for `switched` and `failover`, the one switched or failed over to).
    public var account: String
    /// The window (`5h` or `weekly` in the body), when the event is about one.
    public var window: ChappieUsageWindow.Kind?
    public var usedPercent: Double?
    public var resetsAt: Date?
    public var at: Date
    /// One human sentence.
    public var message: String
    /// `switched` and `failover`: the account left.
    public var from: String?
    /// `threshold`: the threshold crossed.
    public var threshold: Double?

    public init(
        _ event: Kind, account: String, window: ChappieUsageWindow.Kind? = nil, usedPercent: Double? = nil, resetsAt: Date? = nil, at: Date = Date(),
        message: String, from: String? = nil, threshold: Double? = nil
    ) {
        self.event = event
        self.account = account
        self.window = window
        self.usedPercent = usedPercent
        self.resetsAt = resetsAt
        self.at = at
        self.message = message
        self.from = from
        self.threshold = threshold
    }

    /// The body: one JSON object with `event`, `account`, `window`, `usedPercent`, `resetsAt`
    /// (ISO 8601), `at` and `message` always (`null` where they do not apply), and `from` and
    /// `threshold` when set.
    public var json: Data {
        func string(_ value: String?) -> Any { value ?? NSNull() }
        func number(_ value: Double?) -> Any { value.map { ($0 * 10).rounded() / 10 } ?? NSNull() }
        func date(_ value: Date?) -> Any { value.map { $0.formatted(.iso8601) } ?? NSNull() }
        var object: [String: Any] = [
            "event": event.rawValue, "account": account, "window": string(window?.rawValue), "usedPercent": number(usedPercent),
            "resetsAt": date(resetsAt), "at": at.formatted(.iso8601), "message": message,
        ]
        if let from { object["from"] = from }
        if let threshold { object["threshold"] = threshold }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    }
}

import ChappieText
public import ChappieCore

/// How much room an account has left: the one headroom rule of `--best`, auto-switch, `accounts
/// list` and `usage`.
///
/// The binding window is the fuller of the 5-hour and weekly windows; headroom is the reserve (100
/// unless set with `accounts set NAME --reserve`) minus its used percent, never below 0; an account
/// is full when the reading says the limit is reached or the binding window is at or above the
/// reserve.
public struct Headroom: Sendable, Hashable, Codable {
    /// The window that limits first (`5h` or `weekly`), when one is reported.
    public var bindingWindow: ChappieUsageWindow.Kind?
    /// The reserve (or 100) minus the binding window's used percent, never below 0.
    public var percent: Double
    /// Whether the account counts as full.
    public var isFull: Bool

    /// The headroom of a reading for an account with this reserve.
    public init(_ snapshot: ChappieUsageLimitSnapshot, reservePercent: Double?) {
        let binding = snapshot.bindingWindow
        let used = binding?.usedPercent ?? 0
        bindingWindow = binding.map { $0 == snapshot.shortWindow ? .fiveHour : .weekly }
        percent = HeadroomRule.percent(bindingUsed: used, reserve: reservePercent)
        isFull = snapshot.limitReached || used >= (reservePercent ?? 100)
    }
}

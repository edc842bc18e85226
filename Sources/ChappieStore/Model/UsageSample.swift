public import ChappieCore
public import Foundation

/// Where a usage reading came from.
public enum UsageSource: String, Sendable, Codable, CaseIterable {
    /// `GET /backend-api/wham/usage`.
    case poll
    /// The `x-codex-*` headers of a response.
    case headers
    /// A `codex.rate_limits` stream event.
    case stream
    /// A 429 `usage_limit_reached` body.
    case limitError = "limit_error"
}

/// One stored reading of an account's usage windows.
public struct UsageSample: Sendable, Hashable, Codable {
    /// The account's row id.
    public var accountID: Int64
    /// When it was observed.
    public var observedAt: Date
    /// Where it came from.
    public var source: UsageSource
    /// The limit it is about (`codex`, or an additional limit's id).
    public var limitID: String
    /// The windows, credits and plan.
    public var snapshot: ChappieUsageLimitSnapshot
}

/// Per account and 15-minute slot (UTC), what a report sums up: reports merge these into hours,
/// days or weeks of any time zone (every zone's offset is a multiple of 15 minutes).
public struct UsageSlot: Sendable, Hashable {
    /// The account's row id.
    public var accountID: Int64
    /// The slot's start.
    public var start: Date
    /// Samples in the slot.
    public var samples: Int
    /// Highest and summed 5-hour used percent, and how many samples had one.
    public var fiveHourPeak: Double?, fiveHourSum: Double, fiveHourCount: Int
    /// Highest and summed weekly used percent, and how many samples had one.
    public var weeklyPeak: Double?, weeklySum: Double, weeklyCount: Int
    /// Samples that said the limit was reached.
    public var limitReached: Int
    /// The distinct reset times of the 5-hour and weekly windows seen in the slot, ascending.
    public var fiveHourResets: [Int64], weeklyResets: [Int64]
}

/// One observed window (by its reset time) of one account, with its peak use.
public struct UsageWindowSummary: Sendable, Hashable {
    /// The account's row id.
    public var accountID: Int64
    /// `5h` or `weekly`.
    public var kind: ChappieUsageWindow.Kind
    /// When the window resets.
    public var resetsAt: Date
    /// The first and last sample seen in it.
    public var firstSample: Date, lastSample: Date
    /// Samples in it.
    public var samples: Int
    /// The highest used percent seen.
    public var peakPercent: Double
    /// Samples that said the limit was reached.
    public var limitReached: Int
}

import ChappieStoreFormat
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

    /// Creates a reading as a store reads it.
    /// How a failed poll's note (an account's last error) begins: a poll that works clears such a
    /// note, and no other.
    public static let pollFailurePrefix = "usage poll failed"

    public init(accountID: Int64, observedAt: Date, source: UsageSource, limitID: String, snapshot: ChappieUsageLimitSnapshot) {
        self.accountID = accountID
        self.observedAt = observedAt
        self.source = source
        self.limitID = limitID
        self.snapshot = snapshot
    }

    /// How far ahead of this machine's clock a reading may be dated and still count
    /// (`NewestReadings`, which both binaries choose the newest reading by): a reading dated later
    /// would otherwise stay the newest, and fresh, until that date: no poll would ask the service,
    /// and `guard` would trust it.
    public static let futureTolerance: TimeInterval = NewestReadings.futureToleranceSeconds

    /// How old the reading is at `now`; infinite (stale) when it is dated ahead of `now` by more
    /// than a second: such a reading may still be shown as the newest (within
    /// ``futureTolerance``), but it is never fresh enough to spare a poll.
    public func age(at now: Date) -> TimeInterval {
        let age = now.timeIntervalSince(observedAt)
        return age < -1 ? .infinity : max(0, age)
    }
}

/// The part of a stored reading that reports sum up, read row by row in account and time order.
public struct UsageReading: Sendable, Hashable {
    /// The account's row id.
    public var accountID: Int64
    /// When it was observed, in unix seconds.
    public var observedAt: Double
    /// The 5-hour window's used percent and reset time (unix seconds), if reported.
    public var fiveHourUsed: Double?, fiveHourResetsAt: Int64?
    /// The weekly window's used percent and reset time (unix seconds), if reported.
    public var weeklyUsed: Double?, weeklyResetsAt: Int64?
    /// Whether the reading said the limit was reached.
    public var limitReached: Bool

    /// Creates a reading as a store reads it.
    public init(
        accountID: Int64, observedAt: Double, fiveHourUsed: Double?, fiveHourResetsAt: Int64?, weeklyUsed: Double?, weeklyResetsAt: Int64?,
        limitReached: Bool
    ) {
        self.accountID = accountID
        self.observedAt = observedAt
        self.fiveHourUsed = fiveHourUsed
        self.fiveHourResetsAt = fiveHourResetsAt
        self.weeklyUsed = weeklyUsed
        self.weeklyResetsAt = weeklyResetsAt
        self.limitReached = limitReached
    }
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

    /// Creates a summary as a store computes it.
    public init(
        accountID: Int64, kind: ChappieUsageWindow.Kind, resetsAt: Date, firstSample: Date, lastSample: Date, samples: Int, peakPercent: Double,
        limitReached: Int
    ) {
        self.accountID = accountID
        self.kind = kind
        self.resetsAt = resetsAt
        self.firstSample = firstSample
        self.lastSample = lastSample
        self.samples = samples
        self.peakPercent = peakPercent
        self.limitReached = limitReached
    }
}

/// One machine's readings of one account (`usage report --by machine`): on a team pool, which
/// machine polled what; on one machine, all of them.
public struct UsageMachineSummary: Sendable, Hashable {
    /// The machine that took the readings.
    public var machine: String
    /// The account's store id.
    public var accountID: Int64
    /// How many readings.
    public var samples: Int
    /// The first and the last.
    public var firstSample: Date, lastSample: Date
    /// The highest use seen of the 5-hour and the weekly window (`nil`: never reported).
    public var fiveHourPeak: Double?, weeklyPeak: Double?

    /// Creates a summary.
    public init(machine: String, accountID: Int64, samples: Int, firstSample: Date, lastSample: Date, fiveHourPeak: Double?, weeklyPeak: Double?) {
        self.machine = machine
        self.accountID = accountID
        self.samples = samples
        self.firstSample = firstSample
        self.lastSample = lastSample
        self.fiveHourPeak = fiveHourPeak
        self.weeklyPeak = weeklyPeak
    }
}

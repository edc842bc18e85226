package import ChappieCore
package import Foundation

/// The history of usage readings: each account's 5-hour and weekly windows as polled or seen in
/// replies, and the reports folded from them.
package protocol UsageLog: Sendable {
    /// Stores usage readings of an account, one row per limit.
    func recordUsage(_ snapshots: [ChappieUsageLimitSnapshot], for account: Account, source: UsageSource, at date: Date)
        async throws(StoreError)
    /// The newest `codex` reading of each account that has one, by account id.
    func latestUsage() async throws(StoreError) -> [Int64: UsageSample]
    /// An account's readings between two times, oldest first.
    func usageSamples(for account: Account, since: Date?, until: Date?) async throws(StoreError) -> [UsageSample]
    /// Deletes readings older than `date`; returns how many.
    func pruneUsage(olderThan date: Date) async throws(StoreError) -> Int
    /// Folds every `codex` reading between two times, by account then time, into `initial` without
    /// holding them all in memory (reports over millions of readings).
    func reduceUsageReadings<State: Sendable>(
        since: Date?, until: Date?, accounts: [Int64]?, into initial: State,
        _ update: @escaping @Sendable (inout State, UsageReading) throws -> Void
    ) async throws -> State
    /// The `codex` readings between two times by machine and account (one machine: all of them).
    func usageByMachine(since: Date?, until: Date?, accounts: [Int64]?) async throws(StoreError) -> [UsageMachineSummary]
    /// Every observed 5-hour and weekly window (by reset time) of the accounts, with its peak use.
    func usageWindows(since: Date?, until: Date?, accounts: [Int64]?) async throws(StoreError) -> [UsageWindowSummary]
    /// Stores an account's tokens per UTC day as the service reported them: each day's count
    /// replaces the one stored before, and all are marked read at `date`.
    func recordDailyTokens(_ days: [(day: String, tokens: Int)], for account: Account, at date: Date) async throws(StoreError)
    /// The tokens per day of the accounts (all when `nil`) from the day `since` (`YYYY-MM-DD`, or
    /// all), by account, then day.
    func dailyTokens(since: String?, accounts: [Int64]?) async throws(StoreError) -> [DailyTokens]
    /// When each account's tokens per day were last read, by account id.
    func dailyTokensReadAt() async throws(StoreError) -> [Int64: Date]
}

extension UsageLog {
    /// Stores usage readings observed now.
    public func recordUsage(_ snapshots: [ChappieUsageLimitSnapshot], for account: Account, source: UsageSource) async throws(StoreError) {
        try await recordUsage(snapshots, for: account, source: source, at: Date())
    }
}

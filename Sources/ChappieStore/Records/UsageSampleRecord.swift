package import ChappieCore
package import Foundation
package import GRDB

/// A row of `usage_samples`: one reading of one limit of one account. Times are unix seconds, so
/// that reports can group millions of rows in SQL.
package struct UsageSampleRecord: Codable, FetchableRecord, MutablePersistableRecord {
    package static let databaseTableName = "usage_samples"
    package static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    package static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    /// The columns queries filter and sort by.
    package enum Columns {
        static let id = Column("id")
        static let accountId = Column("account_id")
        static let observedAt = Column("observed_at")
    }

    package var id: Int64?
    package var accountId: Int64
    package var observedAt: Double
    package var source: String
    package var limitId: String
    package var plan: String?
    package var fiveHourUsedPercent: Double?
    package var fiveHourWindowMinutes: Int?
    package var fiveHourResetsAt: Int64?
    package var weeklyUsedPercent: Double?
    package var weeklyWindowMinutes: Int?
    package var weeklyResetsAt: Int64?
    package var creditsHasCredits: Bool?
    package var creditsUnlimited: Bool?
    package var creditsBalance: String?
    package var limitReached: Bool

    /// A row as SQLite holds it, whatever it holds: a value of another type or out of range reads
    /// as unknown here (``StoredNumber``), never as a decoding error that would fail every
    /// account's readings, nor a trap.
    package init(row: Row) throws {
        id = StoredNumber.integer(row["id"])
        accountId = StoredNumber.integer(row["account_id"]) ?? 0
        observedAt = StoredNumber.real(row["observed_at"]) ?? .nan
        source = StoredNumber.text(row["source"]) ?? UsageSource.poll.rawValue
        limitId = StoredNumber.text(row["limit_id"]) ?? ""
        plan = StoredNumber.text(row["plan"])
        fiveHourUsedPercent = StoredNumber.real(row["five_hour_used_percent"])
        fiveHourWindowMinutes = StoredNumber.integer(row["five_hour_window_minutes"]).flatMap { Int(exactly: $0) }
        fiveHourResetsAt = StoredNumber.integer(row["five_hour_resets_at"])
        weeklyUsedPercent = StoredNumber.real(row["weekly_used_percent"])
        weeklyWindowMinutes = StoredNumber.integer(row["weekly_window_minutes"]).flatMap { Int(exactly: $0) }
        weeklyResetsAt = StoredNumber.integer(row["weekly_resets_at"])
        creditsHasCredits = StoredNumber.integer(row["credits_has_credits"]).map { $0 != 0 }
        creditsUnlimited = StoredNumber.integer(row["credits_unlimited"]).map { $0 != 0 }
        creditsBalance = StoredNumber.text(row["credits_balance"])
        limitReached = StoredNumber.integer(row["limit_reached"]).map { $0 != 0 } ?? false
    }

    package mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    /// The row for a reading of an account observed at `date`.
    package init(_ snapshot: ChappieUsageLimitSnapshot, accountID: Int64, source: UsageSource, at date: Date) {
        func seconds(_ date: Date?) -> Int64? { date.map { Int64($0.timeIntervalSince1970.rounded()) } }
        accountId = accountID
        observedAt = date.timeIntervalSince1970
        self.source = source.rawValue
        limitId = snapshot.limitID
        plan = snapshot.plan?.rawValue
        fiveHourUsedPercent = snapshot.shortWindow?.usedPercent
        fiveHourWindowMinutes = snapshot.shortWindow?.windowMinutes
        fiveHourResetsAt = seconds(snapshot.shortWindow?.resetsAt)
        weeklyUsedPercent = snapshot.longWindow?.usedPercent
        weeklyWindowMinutes = snapshot.longWindow?.windowMinutes
        weeklyResetsAt = seconds(snapshot.longWindow?.resetsAt)
        creditsHasCredits = snapshot.credits?.hasCredits
        creditsUnlimited = snapshot.credits?.unlimited
        creditsBalance = snapshot.credits?.balance
        limitReached = snapshot.limitReached
    }

    /// The public model, its numbers checked (``StoredNumber``); `nil` when the reading's own time
    /// is out of range: then the row tells nothing, and its account is read as if it were not there.
    package var sample: UsageSample? {
        guard let observed = StoredNumber.date(observedAt) else { return nil }
        func window(_ used: Double?, _ minutes: Int?, _ resets: Int64?) -> ChappieUsageWindow? {
            StoredNumber.percent(used).map {
                ChappieUsageWindow(usedPercent: $0, windowMinutes: StoredNumber.minutes(minutes), resetsAt: StoredNumber.date(resets))
            }
        }
        let snapshot = ChappieUsageLimitSnapshot(
            limitID: limitId, plan: plan.map(ChappiePlan.init(rawValue:)),
            shortWindow: window(fiveHourUsedPercent, fiveHourWindowMinutes, fiveHourResetsAt),
            longWindow: window(weeklyUsedPercent, weeklyWindowMinutes, weeklyResetsAt),
            credits: creditsHasCredits.map { ChappieCredits(hasCredits: $0, unlimited: creditsUnlimited ?? false, balance: creditsBalance) },
            limitReached: limitReached)
        return UsageSample(
            accountID: accountId, observedAt: observed, source: UsageSource(rawValue: source) ?? .poll,
            limitID: limitId, snapshot: snapshot)
    }
}

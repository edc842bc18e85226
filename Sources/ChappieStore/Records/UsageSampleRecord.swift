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

    /// The public model.
    package var sample: UsageSample {
        func window(_ used: Double?, _ minutes: Int?, _ resets: Int64?) -> ChappieUsageWindow? {
            used.map { ChappieUsageWindow(usedPercent: $0, windowMinutes: minutes, resetsAt: resets.map { Date(timeIntervalSince1970: Double($0)) }) }
        }
        let snapshot = ChappieUsageLimitSnapshot(
            limitID: limitId, plan: plan.map(ChappiePlan.init(rawValue:)),
            shortWindow: window(fiveHourUsedPercent, fiveHourWindowMinutes, fiveHourResetsAt),
            longWindow: window(weeklyUsedPercent, weeklyWindowMinutes, weeklyResetsAt),
            credits: creditsHasCredits.map { ChappieCredits(hasCredits: $0, unlimited: creditsUnlimited ?? false, balance: creditsBalance) },
            limitReached: limitReached)
        return UsageSample(
            accountID: accountId, observedAt: Date(timeIntervalSince1970: observedAt), source: UsageSource(rawValue: source) ?? .poll,
            limitID: limitId, snapshot: snapshot)
    }
}

public import ChappieCore
public import Foundation
import ChappieStoreFormat
import GRDB

extension SQLiteAccountStore {
    public func recordUsage(
        _ snapshots: [ChappieUsageLimitSnapshot], for account: Account, source: UsageSource, at date: Date
    ) async throws(StoreError) {
        try await write { db in
            for snapshot in snapshots {
                var record = UsageSampleRecord(snapshot, accountID: account.id, source: source, at: date)
                try record.insert(db)
            }
            if Self.clearsPollFailure(snapshots, source: source, at: date) {
                try db.execute(
                    sql: "UPDATE accounts SET last_error = NULL WHERE id = ? AND status = 'ok' AND last_error LIKE ?",
                    arguments: [account.id, UsageSample.pollFailurePrefix + "%"])
            }
        }
    }

    /// Whether storing these readings ends a poll's failure note: a poll that worked just now. Old
    /// readings (a restore) and readings from replies leave it; so does any other failure's note.
    package static func clearsPollFailure(_ snapshots: [ChappieUsageLimitSnapshot], source: UsageSource, at date: Date) -> Bool {
        !snapshots.isEmpty && source == .poll && date.timeIntervalSinceNow > -300
    }

    public func latestUsage() async throws(StoreError) -> [Int64: UsageSample] {
        try await read { db in try Self.latestUsage(db) }
    }

    /// Each account's newest `codex` reading, by account id (the store's and ``UnsealedView``'s),
    /// chosen as the front binary chooses it (``NewestReadings``).
    static func latestUsage(_ db: Database, now: Date = Date()) throws -> [Int64: UsageSample] {
        let records = try UsageSampleRecord.fetchAll(db, sql: NewestReadings.sql(now: now.timeIntervalSince1970))
        return Dictionary(records.compactMap(\.sample).map { ($0.accountID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public func usageSamples(for account: Account, since: Date?, until: Date?) async throws(StoreError) -> [UsageSample] {
        try await read { db in
            let columns = UsageSampleRecord.Columns.self
            return
                try UsageSampleRecord
                .filter(columns.accountId == account.id)
                .filter(columns.observedAt >= (since?.timeIntervalSince1970 ?? -Double.greatestFiniteMagnitude))
                .filter(columns.observedAt < (until?.timeIntervalSince1970 ?? Double.greatestFiniteMagnitude))
                .order(columns.observedAt, columns.id)
                .fetchAll(db).compactMap(\.sample)
        }
    }

    public func recordDailyTokens(_ days: [(day: String, tokens: Int)], for account: Account, at date: Date) async throws(StoreError) {
        try await write { db in
            for (day, tokens) in days {
                try db.execute(
                    sql: """
                        INSERT INTO daily_tokens (account_id, day, tokens) VALUES (?, ?, ?)
                        ON CONFLICT (account_id, day) DO UPDATE SET tokens = excluded.tokens
                        """, arguments: [account.id, day, tokens])
            }
            try db.execute(
                sql: """
                    INSERT INTO token_history_reads (account_id, read_at) VALUES (?, ?)
                    ON CONFLICT (account_id) DO UPDATE SET read_at = excluded.read_at
                    """, arguments: [account.id, date.timeIntervalSince1970])
        }
    }

    public func dailyTokens(since: String?, accounts: [Int64]?) async throws(StoreError) -> [DailyTokens] {
        try await read { db in
            var sql = "SELECT account_id, day, tokens FROM daily_tokens WHERE day >= ?"
            var arguments: StatementArguments = [since ?? ""]
            if let accounts {
                sql += " AND account_id IN (\(accounts.map { _ in "?" }.joined(separator: ",")))"
                arguments += StatementArguments(accounts)
            }
            // Read as outside input (StoredNumber): a row that does not make sense is left out.
            return try Row.fetchAll(db, sql: sql + " ORDER BY account_id, day", arguments: arguments).compactMap { row in
                guard let account = StoredNumber.integer(row[0]), let day = StoredNumber.text(row[1]), let tokens = StoredNumber.real(row[2])
                else { return nil }
                return DailyTokens(accountID: account, day: day, tokens: Int(max(0, min(tokens, Double(DailyTokens.maximumPerDay)))))
            }
        }
    }

    public func dailyTokensReadAt() async throws(StoreError) -> [Int64: Date] {
        try await read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT account_id, read_at FROM token_history_reads")
            let reads = rows.compactMap { row -> (Int64, Date)? in
                guard let account = StoredNumber.integer(row[0]), let date = StoredNumber.date(StoredNumber.real(row[1])) else { return nil }
                return (account, date)
            }
            return Dictionary(reads, uniquingKeysWith: max)
        }
    }

    public func pruneUsage(olderThan date: Date) async throws(StoreError) -> Int {
        try await write { db in
            let deleted = try UsageSampleRecord.filter(UsageSampleRecord.Columns.observedAt < date.timeIntervalSince1970).deleteAll(db)
            try db.record(.usagePruned, account: nil, detail: "\(deleted) samples before \(ISO8601DateFormatter().string(from: date))")
            return deleted
        }
    }

    public func reduceUsageReadings<State: Sendable>(
        since: Date?, until: Date?, accounts: [Int64]?, into initial: State,
        _ update: @escaping @Sendable (inout State, UsageReading) throws -> Void
    ) async throws -> State {
        try await read { db in
            var state = initial
            let (filter, arguments) = Self.readingFilter(since: since, until: until, accounts: accounts)
            let sql = """
                SELECT account_id, observed_at, five_hour_used_percent, five_hour_resets_at, weekly_used_percent, weekly_resets_at, limit_reached
                FROM usage_samples WHERE \(filter) ORDER BY account_id, observed_at
                """
            let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            while let row = try rows.next() {
                guard
                    let reading = UsageReading.stored(
                        accountID: StoredNumber.integer(row[0]) ?? 0, observedAt: StoredNumber.real(row[1]), fiveHourUsed: StoredNumber.real(row[2]),
                        fiveHourResetsAt: StoredNumber.integer(row[3]), weeklyUsed: StoredNumber.real(row[4]),
                        weeklyResetsAt: StoredNumber.integer(row[5]), limitReached: StoredNumber.integer(row[6]).map { $0 != 0 } ?? false)
                else { continue }
                try update(&state, reading)
            }
            return state
        }
    }

    public func usageWindows(since: Date?, until: Date?, accounts: [Int64]?) async throws(StoreError) -> [UsageWindowSummary] {
        try await read { db in
            var summaries: [UsageWindowSummary] = []
            for (kind, prefix) in [(ChappieUsageWindow.Kind.fiveHour, "five_hour"), (.weekly, "weekly")] {
                let (filter, arguments) = Self.readingFilter(since: since, until: until, accounts: accounts)
                let sql = """
                    SELECT account_id, \(prefix)_resets_at AS resets, min(observed_at) AS first, max(observed_at) AS last,
                        count(*) AS n, max(\(prefix)_used_percent) AS peak, sum(limit_reached) AS reached
                    FROM usage_samples WHERE \(prefix)_resets_at IS NOT NULL AND \(filter) GROUP BY account_id, resets
                    """
                summaries += try Row.fetchAll(db, sql: sql, arguments: arguments).compactMap { row in
                    UsageWindowSummary.stored(
                        accountID: StoredNumber.integer(row["account_id"]) ?? 0, kind: kind, resetsAt: StoredNumber.integer(row["resets"]),
                        firstSample: StoredNumber.real(row["first"]), lastSample: StoredNumber.real(row["last"]),
                        samples: StoredNumber.integer(row["n"]).flatMap { Int(exactly: $0) } ?? 0, peakPercent: StoredNumber.real(row["peak"]),
                        limitReached: StoredNumber.integer(row["reached"]).flatMap { Int(exactly: $0) } ?? 0)
                }
            }
            return summaries
        }
    }

    public func usageByMachine(since: Date?, until: Date?, accounts: [Int64]?) async throws(StoreError) -> [UsageMachineSummary] {
        let machine = StoreOptions.hostName
        return try await read { db in
            let (filter, arguments) = Self.readingFilter(since: since, until: until, accounts: accounts)
            let sql = """
                SELECT account_id, count(*), min(observed_at), max(observed_at), max(five_hour_used_percent), max(weekly_used_percent)
                FROM usage_samples WHERE \(filter) GROUP BY account_id
                """
            return try Row.fetchAll(db, sql: sql, arguments: arguments).compactMap { row in
                UsageMachineSummary.stored(
                    machine: machine, accountID: StoredNumber.integer(row[0]) ?? 0,
                    samples: StoredNumber.integer(row[1]).flatMap { Int(exactly: $0) } ?? 0,
                    firstSample: StoredNumber.real(row[2]), lastSample: StoredNumber.real(row[3]), fiveHourPeak: StoredNumber.real(row[4]),
                    weeklyPeak: StoredNumber.real(row[5]))
            }
        }
    }

    /// The `WHERE` condition shared by reports: `codex` readings in a time range, of some accounts.
    private static func readingFilter(since: Date?, until: Date?, accounts: [Int64]?) -> (String, StatementArguments) {
        var condition = "limit_id = 'codex' AND observed_at >= ? AND observed_at < ?"
        var arguments: [any DatabaseValueConvertible] = [
            since?.timeIntervalSince1970 ?? -Double.greatestFiniteMagnitude, until?.timeIntervalSince1970 ?? Double.greatestFiniteMagnitude,
        ]
        if let accounts {
            condition += " AND account_id IN (\(accounts.map { _ in "?" }.joined(separator: ",")))"
            arguments += accounts.map { $0 as any DatabaseValueConvertible }
        }
        return (condition, StatementArguments(arguments))
    }
}

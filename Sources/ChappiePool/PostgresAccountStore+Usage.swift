package import ChappieStore
package import ChappieCore
package import Foundation
import PostgresNIO

extension PostgresAccountStore {
    /// The columns of `usage_samples` a sample is read from, in the order ``sample(_:)`` decodes.
    private static let sampleColumns = """
        account_id, observed_at, source, limit_id, plan, five_hour_used_percent, five_hour_window_minutes, five_hour_resets_at, \
        weekly_used_percent, weekly_window_minutes, weekly_resets_at, credits_has_credits, credits_unlimited, credits_balance, limit_reached
        """

    /// A row's reading, its numbers checked (``StoredNumber``); `nil` when its own time makes no sense.
    private static func sample(_ row: PostgresRow) throws -> UsageSample? {
        let (
            accountID, observedAt, source, limitID, plan, fiveHourUsed, fiveHourMinutes, fiveHourResets, weeklyUsed, weeklyMinutes,
            weeklyResets, hasCredits, unlimited, balance, limitReached
        ) = try row.decode(
            (Int64, Double, String, String, String?, Double?, Int?, Int64?, Double?, Int?, Int64?, Bool?, Bool?, String?, Bool).self)
        var record = UsageSampleRecord(
            ChappieUsageLimitSnapshot(limitID: limitID, plan: nil, shortWindow: nil, longWindow: nil), accountID: accountID,
            source: UsageSource(rawValue: source) ?? .poll, at: Date(timeIntervalSince1970: observedAt))
        record.plan = plan
        record.fiveHourUsedPercent = fiveHourUsed
        record.fiveHourWindowMinutes = fiveHourMinutes
        record.fiveHourResetsAt = fiveHourResets
        record.weeklyUsedPercent = weeklyUsed
        record.weeklyWindowMinutes = weeklyMinutes
        record.weeklyResetsAt = weeklyResets
        record.creditsHasCredits = hasCredits
        record.creditsUnlimited = unlimited
        record.creditsBalance = balance
        record.limitReached = limitReached
        return record.sample
    }

    package func recordUsage(
        _ snapshots: [ChappieUsageLimitSnapshot], for account: Account, source: UsageSource, at date: Date
    ) async throws(StoreError) {
        let machine = self.machine
        try await database.write { connection in
            for snapshot in snapshots {
                try await Self.insertSample(
                    UsageSampleRecord(snapshot, accountID: account.id, source: source, at: date), machine: machine, connection)
            }
            if SQLiteAccountStore.clearsPollFailure(snapshots, source: source, at: date) {
                try await connection.query(
                    "UPDATE accounts SET last_error = NULL WHERE id = \(account.id) AND status = 'ok' AND last_error LIKE \(UsageSample.pollFailurePrefix + "%")",
                    logger: Self.logger)
            }
        }
    }

    /// Inside a write transaction: one reading of one account, taken by `machine`.
    static func insertSample(_ r: UsageSampleRecord, machine: String, _ connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO usage_samples (account_id, machine, observed_at, source, limit_id, plan, five_hour_used_percent,
                five_hour_window_minutes, five_hour_resets_at, weekly_used_percent, weekly_window_minutes, weekly_resets_at,
                credits_has_credits, credits_unlimited, credits_balance, limit_reached)
            VALUES (\(r.accountId), \(machine), \(r.observedAt), \(r.source), \(r.limitId), \(r.plan), \(r.fiveHourUsedPercent),
                \(r.fiveHourWindowMinutes), \(r.fiveHourResetsAt), \(r.weeklyUsedPercent), \(r.weeklyWindowMinutes), \(r.weeklyResetsAt),
                \(r.creditsHasCredits), \(r.creditsUnlimited), \(r.creditsBalance), \(r.limitReached))
            """, logger: logger)
    }

    package func latestUsage() async throws(StoreError) -> [Int64: UsageSample] {
        let now = Date().timeIntervalSince1970
        return try await database.read { connection in
            var latest: [Int64: UsageSample] = [:]
            let rows = try await connection.query(
                """
                SELECT DISTINCT ON (account_id) \(unescaped: Self.sampleColumns) FROM usage_samples
                WHERE limit_id = 'codex' AND observed_at >= 0 AND observed_at <= \(now + UsageSample.futureTolerance)
                ORDER BY account_id, observed_at <= \(now) DESC, observed_at DESC, id DESC
                """, logger: Self.logger)
            // Chosen as in the local store (NewestReadings): readings dated beyond the tolerance are
            // passed over, and one dated ahead within it counts only when there is none up to now.
            for try await row in rows {
                guard let sample = try Self.sample(row) else { continue }
                latest[sample.accountID] = sample
            }
            return latest
        }
    }

    package func usageSamples(for account: Account, since: Date?, until: Date?) async throws(StoreError) -> [UsageSample] {
        try await database.read { connection in
            var samples: [UsageSample] = []
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.sampleColumns) FROM usage_samples
                WHERE account_id = \(account.id) AND observed_at >= \(since?.timeIntervalSince1970 ?? -Double.greatestFiniteMagnitude)
                    AND observed_at < \(until?.timeIntervalSince1970 ?? Double.greatestFiniteMagnitude)
                ORDER BY observed_at, id
                """, logger: Self.logger)
            for try await row in rows { if let sample = try Self.sample(row) { samples.append(sample) } }
            return samples
        }
    }

    package func recordDailyTokens(_ days: [(day: String, tokens: Int)], for account: Account, at date: Date) async throws(StoreError) {
        try await database.write { connection in
            for (day, tokens) in days {
                try await connection.query(
                    """
                    INSERT INTO daily_tokens (account_id, day, tokens) VALUES (\(account.id), \(day), \(tokens))
                    ON CONFLICT (account_id, day) DO UPDATE SET tokens = excluded.tokens
                    """, logger: Self.logger)
            }
            try await connection.query(
                """
                INSERT INTO token_history_reads (account_id, read_at) VALUES (\(account.id), \(date.timeIntervalSince1970))
                ON CONFLICT (account_id) DO UPDATE SET read_at = excluded.read_at
                """, logger: Self.logger)
        }
    }

    package func dailyTokens(since: String?, accounts: [Int64]?) async throws(StoreError) -> [DailyTokens] {
        try await database.read { connection in
            var found: [DailyTokens] = []
            let filter = accounts.map { " AND account_id IN (\($0.isEmpty ? "NULL" : $0.map(String.init).joined(separator: ",")))" } ?? ""
            let rows = try await connection.query(
                "SELECT account_id, day, tokens FROM daily_tokens WHERE day >= \(since ?? "")\(unescaped: filter) ORDER BY account_id, day",
                logger: Self.logger)
            for try await (account, day, tokens) in rows.decode((Int64, String, Int64).self) {
                found.append(DailyTokens(accountID: account, day: day, tokens: Int(tokens)))
            }
            return found
        }
    }

    package func dailyTokensReadAt() async throws(StoreError) -> [Int64: Date] {
        try await database.read { connection in
            var read: [Int64: Date] = [:]
            let rows = try await connection.query("SELECT account_id, read_at FROM token_history_reads", logger: Self.logger)
            // A time out of range (a pool's rows are anyone's who can write it) is no read.
            for try await (account, at) in rows.decode((Int64, Double).self) { read[account] = StoredNumber.date(at) ?? read[account] }
            return read
        }
    }

    package func pruneUsage(olderThan date: Date) async throws(StoreError) -> Int {
        try await database.write { connection in
            var deleted = 0
            let rows = try await connection.query(
                "WITH gone AS (DELETE FROM usage_samples WHERE observed_at < \(date.timeIntervalSince1970) RETURNING 1) SELECT count(*) FROM gone",
                logger: Self.logger)
            for try await (count) in rows.decode(Int.self) { deleted = count }
            try await self.audit(
                .usagePruned, account: nil, detail: "\(deleted) samples before \(ISO8601DateFormatter().string(from: date))", connection)
            return deleted
        }
    }

    package func reduceUsageReadings<State: Sendable>(
        since: Date?, until: Date?, accounts: [Int64]?, into initial: State,
        _ update: @escaping @Sendable (inout State, UsageReading) throws -> Void
    ) async throws -> State {
        let client = database.client
        do {
            // No deadline: a report over millions of readings takes as long as it takes; rows stream.
            // The connection's statement_timeout is lifted for this one transaction.
            return try await client.withTransaction(logger: Self.logger) { connection in
                var state = initial
                try await connection.query("SET LOCAL statement_timeout = 0", logger: Self.logger)
                let rows = try await connection.query(
                    """
                    SELECT account_id, observed_at, five_hour_used_percent, five_hour_resets_at, weekly_used_percent, weekly_resets_at, limit_reached
                    FROM usage_samples WHERE \(unescaped: Self.readingFilter(since: since, until: until, accounts: accounts)) ORDER BY account_id, observed_at
                    """, logger: Self.logger)
                for try await (account, observed, fiveHour, fiveHourResets, weekly, weeklyResets, reached) in rows.decode(
                    (Int64, Double, Double?, Int64?, Double?, Int64?, Bool).self)
                {
                    guard
                        let reading = UsageReading.stored(
                            accountID: account, observedAt: observed, fiveHourUsed: fiveHour, fiveHourResetsAt: fiveHourResets, weeklyUsed: weekly,
                            weeklyResetsAt: weeklyResets, limitReached: reached)
                    else { continue }
                    try update(&state, reading)
                }
                return state
            }
        } catch {
            throw PoolDatabase.storeError(error, address: database.address, doing: "reading the usage history")
        }
    }

    package func usageWindows(since: Date?, until: Date?, accounts: [Int64]?) async throws(StoreError) -> [UsageWindowSummary] {
        try await database.read { connection in
            var summaries: [UsageWindowSummary] = []
            for (kind, prefix) in [(ChappieUsageWindow.Kind.fiveHour, "five_hour"), (.weekly, "weekly")] {
                let rows = try await connection.query(
                    """
                    SELECT account_id, \(unescaped: prefix)_resets_at, min(observed_at), max(observed_at), count(*),
                        max(\(unescaped: prefix)_used_percent), count(*) FILTER (WHERE limit_reached)
                    FROM usage_samples
                    WHERE \(unescaped: prefix)_resets_at IS NOT NULL AND \(unescaped: Self.readingFilter(since: since, until: until, accounts: accounts))
                    GROUP BY account_id, \(unescaped: prefix)_resets_at
                    """, logger: Self.logger)
                for try await (account, resets, first, last, count, peak, reached) in rows.decode(
                    (Int64, Int64, Double, Double, Int, Double?, Int).self)
                {
                    if let summary = UsageWindowSummary.stored(
                        accountID: account, kind: kind, resetsAt: resets, firstSample: first, lastSample: last, samples: count, peakPercent: peak,
                        limitReached: reached)
                    {
                        summaries.append(summary)
                    }
                }
            }
            return summaries
        }
    }

    package func usageByMachine(since: Date?, until: Date?, accounts: [Int64]?) async throws(StoreError) -> [UsageMachineSummary] {
        try await database.read { connection in
            var summaries: [UsageMachineSummary] = []
            let rows = try await connection.query(
                """
                SELECT machine, account_id, count(*)::bigint, min(observed_at), max(observed_at), max(five_hour_used_percent), max(weekly_used_percent)
                FROM usage_samples WHERE \(unescaped: Self.readingFilter(since: since, until: until, accounts: accounts))
                GROUP BY machine, account_id
                """, logger: Self.logger)
            for try await (machine, account, count, first, last, five, weekly) in rows.decode(
                (String, Int64, Int64, Double, Double, Double?, Double?).self)
            {
                if let summary = UsageMachineSummary.stored(
                    machine: machine, accountID: account, samples: Int(count), firstSample: first, lastSample: last, fiveHourPeak: five,
                    weeklyPeak: weekly)
                {
                    summaries.append(summary)
                }
            }
            return summaries
        }
    }

    /// The condition shared by reports: `codex` readings in a time range, of some accounts. Only
    /// numbers are written into it (times and ids), never text.
    private static func readingFilter(since: Date?, until: Date?, accounts: [Int64]?) -> String {
        let from = since.map { "\($0.timeIntervalSince1970)::float8" } ?? "'-Infinity'::float8"
        let to = until.map { "\($0.timeIntervalSince1970)::float8" } ?? "'Infinity'::float8"
        var condition = "limit_id = 'codex' AND observed_at >= \(from) AND observed_at < \(to)"
        if let accounts { condition += " AND account_id IN (\(accounts.isEmpty ? "NULL" : accounts.map(String.init).joined(separator: ",")))" }
        return condition
    }
}

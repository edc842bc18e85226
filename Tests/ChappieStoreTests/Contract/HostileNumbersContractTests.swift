import ChappieCore
import ChappieStore
import ChappieTestSupport
import Foundation
import GRDB
import Testing

/// Every numeric column of both stores, set by hand to hostile values (what anyone who can write a
/// team pool, or edit the database file, can do): every reader still answers, and what it answers
/// is in range (issue 40, item 2; docs/security.md, "Hostile input").
@Suite("Hostile numbers in every numeric column crash no reader", .serialized)
struct HostileNumbersContractTests {
    /// The columns, by table, with the values tried in each (SQL literals). A value the column or
    /// its check refuses is skipped: only what a store can hold matters.
    static func columns(_ backend: StoreBackend) -> [(table: String, column: String, values: [String])] {
        let integers = ["9223372036854775807", "-9223372036854775808", "-1", "0"]
        let reals =
            backend == .sqlite
            ? ["1e308", "-1e308", "9e999", "-9e999", "-1", "9223372036854775807"]
            : ["'NaN'", "'Infinity'", "'-Infinity'", "1e308", "-1e308", "-1"]
        let times = backend == .sqlite ? reals : ["'infinity'", "'-infinity'", "'294276-12-31 23:59:59+00'", "'4713-01-01 00:00:00+00 BC'"]
        return [
            ("usage_samples", "observed_at", reals), ("usage_samples", "five_hour_used_percent", reals),
            ("usage_samples", "five_hour_window_minutes", integers), ("usage_samples", "five_hour_resets_at", integers + reals),
            ("usage_samples", "weekly_used_percent", reals), ("usage_samples", "weekly_window_minutes", integers),
            ("usage_samples", "weekly_resets_at", integers + reals), ("daily_tokens", "tokens", integers + reals),
            ("token_history_reads", "read_at", reals + ["'text'"]),
            ("daily_tokens", "account_id", ["1e308", "'text'"]), ("leases", "whole_account", ["'text'", "x'00ff'"]),
            ("leases", "acquired_at", times), ("leases", "expires_at", times), ("accounts", "reserve_percent", reals),
            ("accounts", "max_leases", integers),
        ]
            + (backend == .postgres
                ? ["access_expires_at", "last_refresh_at", "created_at", "updated_at"].map { ("accounts", $0, times) } : [])
    }

    /// Sets `column` of every row of `table` to `value`; whether the store took it.
    static func set(_ store: ContractStore, _ table: String, _ column: String, _ value: String) async throws -> Bool {
        let sql = "UPDATE \(table) SET \(column) = \(value)"
        switch store.backend {
        case .sqlite:
            let database = try DatabaseQueue(path: store.home.appendingPathComponent("chappie.sqlite").path)
            defer { try? database.close() }
            return (try? await database.write { try $0.execute(sql: sql) }) != nil
        case .postgres:
            return try await SharedPostgres.database().server.psql(sql, in: try #require(store.address)).status == 0
        }
    }

    @Test("Every reader answers in range, whatever a numeric column holds", arguments: StoreBackend.allCases)
    func everyReaderAnswers(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let opened = try await store.open()
            let account = try await opened.add(Identity("hostile@example.com", marker: "h"), name: "hostile")
            let window = ChappieUsageWindow(usedPercent: 42, windowMinutes: 300, resetsAt: Date(timeIntervalSinceNow: 3600))
            try await opened.recordUsage(
                [ChappieUsageLimitSnapshot(limitID: "codex", plan: .plus, shortWindow: window, longWindow: window)], for: account, source: .poll,
                at: Date())
            try await opened.recordDailyTokens([(day: "2026-12-01", tokens: 1000)], for: account, at: Date())
            _ = try await opened.acquireLease(on: [Lease.Candidate(accountID: account.id, wholeAccount: false)], holder: "test", ttl: .seconds(600))
            for (table, column, values) in Self.columns(backend) {
                for value in values {
                    guard try await Self.set(store, table, column, value) else { continue }
                    do {
                        try await Self.readEverything(try await store.open(), "\(table).\(column) = \(value)")
                    } catch {
                        Issue.record("\(table).\(column) = \(value): a reader failed: \(error)")
                    }
                }
                // Back to a sane row for the next column: a fresh store is too slow on a pool.
                try await Self.restore(store, table, column)
            }
        }
    }

    /// Puts a sane value back into `column`.
    static func restore(_ store: ContractStore, _ table: String, _ column: String) async throws {
        let now = Date().timeIntervalSince1970
        let sane: String =
            switch column {
            case "observed_at", "read_at": "\(now)"
            case "account_id": "(SELECT id FROM accounts LIMIT 1)"
            case "whole_account": store.backend == .sqlite ? "0" : "false"
            case "five_hour_resets_at", "weekly_resets_at": "\(Int(now) + 3600)"
            case "five_hour_used_percent", "weekly_used_percent", "reserve_percent": column == "reserve_percent" ? "NULL" : "42"
            case "five_hour_window_minutes", "weekly_window_minutes": "300"
            case "tokens": "1000"
            case "max_leases": "1"
            case "access_expires_at", "last_refresh_at", "created_at", "updated_at": "now()"
            default: store.backend == .sqlite ? "\(now + 600)" : "now() + interval '10 minutes'"
            }
        _ = try await set(store, table, column, sane)
    }

    /// Runs every reader of the store and checks what each says.
    static func readEverything(_ store: any AccountStore, _ what: String) async throws {
        // Dates are checked as seconds and never described: describing a date past 9999 traps.
        func times(_ dates: [Date?], _ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let wrong = dates.compactMap { $0?.timeIntervalSince1970 }.filter { !($0 >= 0 && $0 <= 253_402_300_799) }
            #expect(wrong.isEmpty, "\(what): \(label) at \(wrong) s", sourceLocation: sourceLocation)
        }
        func percent(_ value: Double?) -> Bool { value.map { $0 >= 0 && $0 <= 100 } ?? true }
        func window(_ window: ChappieUsageWindow?, _ label: String) {
            guard let window else { return }
            times([window.resetsAt], label)
            #expect(percent(window.usedPercent) && (window.windowMinutes.map { $0 > 0 && $0 <= 5_256_000 } ?? true), "\(what): \(label)")
        }
        let accounts = try await store.accounts()
        #expect(!accounts.isEmpty, "\(what): the account is still read")
        for account in accounts {
            #expect(account.reservePercent.map { $0 > 0 && $0 <= 100 } ?? true, "\(what): reserve \(String(describing: account.reservePercent))")
            #expect(account.maxLeases >= 1, "\(what)")
            times([account.accessTokenExpiresAt, account.lastRefreshAt, account.createdAt, account.updatedAt], "an account")
            for sample in try await store.usageSamples(for: account, since: nil, until: nil) {
                times([sample.observedAt], "a reading")
                window(sample.snapshot.shortWindow, "a reading's 5-hour window")
                window(sample.snapshot.longWindow, "a reading's weekly window")
            }
        }
        for sample in (try await store.latestUsage()).values {
            times([sample.observedAt], "the newest reading")
            window(sample.snapshot.shortWindow, "the newest 5-hour window")
            window(sample.snapshot.longWindow, "the newest weekly window")
            let ahead = sample.observedAt.timeIntervalSinceNow
            #expect(ahead <= UsageSample.futureTolerance, "\(what): a reading from the future is the newest")
        }
        let readings = try await store.reduceUsageReadings(since: nil, until: nil, accounts: nil, into: [UsageReading]()) { $0.append($1) }
        for reading in readings {
            times(
                [reading.observedAt, reading.fiveHourResetsAt.map(Double.init), reading.weeklyResetsAt.map(Double.init)].map {
                    $0.map(Date.init(timeIntervalSince1970:))
                }, "a report's reading")
            #expect(percent(reading.fiveHourUsed) && percent(reading.weeklyUsed), "\(what)")
        }
        for summary in try await store.usageWindows(since: nil, until: nil, accounts: nil) {
            times([summary.resetsAt, summary.firstSample, summary.lastSample], "a window")
            #expect(percent(summary.peakPercent), "\(what)")
        }
        for summary in try await store.usageByMachine(since: nil, until: nil, accounts: nil) {
            times([summary.firstSample, summary.lastSample], "a machine's readings")
            #expect(percent(summary.fiveHourPeak) && percent(summary.weeklyPeak), "\(what)")
        }
        for day in try await store.dailyTokens(since: nil, accounts: nil) {
            #expect(day.tokens >= 0 && day.tokens <= DailyTokens.maximumPerDay, "\(what)")
        }
        times(Array((try await store.dailyTokensReadAt()).values), "a token history read")
        for lease in try await store.leases() { times([lease.acquiredAt, lease.expiresAt], "a lease") }
    }
}

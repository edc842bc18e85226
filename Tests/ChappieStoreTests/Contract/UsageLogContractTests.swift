import ChappieCore
import ChappieStore
import Foundation
import Testing

@Suite("Contract: the usage log (UsageLog), on every backend")
struct UsageLogContractTests {
    /// A `codex` reading: 5-hour and weekly use, each with its reset time.
    static func reading(_ fiveHour: Double, _ weekly: Double, resets: Date, limitID: String = "codex", reached: Bool = false)
        -> ChappieUsageLimitSnapshot
    {
        ChappieUsageLimitSnapshot(
            limitID: limitID, plan: .plus, shortWindow: ChappieUsageWindow(usedPercent: fiveHour, windowMinutes: 300, resetsAt: resets),
            longWindow: ChappieUsageWindow(usedPercent: weekly, windowMinutes: 10_080, resetsAt: resets.addingTimeInterval(86_400)),
            limitReached: reached)
    }

    static let base = Date(timeIntervalSince1970: 1_790_000_000)

    @Test(
        "Readings come back per account, oldest first, within [since, until); the newest codex reading is each account's latest",
        arguments: StoreBackend.allCases)
    func samplesAndLatest(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"))
            let b = try await store.add(Identity("b@example.com", marker: "b"))
            let resets = Self.base.addingTimeInterval(18_000)
            for minute in [2.0, 0, 1] {
                try await store.recordUsage(
                    [Self.reading(10 * (minute + 1), 5, resets: resets)], for: a, source: .poll, at: Self.base.addingTimeInterval(60 * minute))
            }
            try await store.recordUsage([Self.reading(70, 40, resets: resets)], for: b, source: .headers, at: Self.base)
            // Another limit than codex is kept, but is never the latest codex reading.
            try await store.recordUsage(
                [Self.reading(99, 99, resets: resets, limitID: "codex_other")], for: a, source: .poll, at: Self.base.addingTimeInterval(600))

            let samples = try await store.usageSamples(for: a, since: nil, until: nil)
            #expect(samples.map(\.observedAt) == samples.map(\.observedAt).sorted())
            #expect(samples.count == 4)
            #expect(samples.allSatisfy { $0.accountID == a.id })
            let window = try await store.usageSamples(for: a, since: Self.base.addingTimeInterval(60), until: Self.base.addingTimeInterval(120))
            #expect(window.map(\.snapshot.shortWindow?.usedPercent) == [20])
            #expect(window.first?.source == .poll)

            let latest = try await store.latestUsage()
            #expect(Set(latest.keys) == [a.id, b.id])
            #expect(latest[a.id]?.snapshot.shortWindow?.usedPercent == 30)
            #expect(latest[a.id]?.limitID == "codex")
            #expect(latest[b.id]?.source == .headers)
            #expect(latest[b.id]?.snapshot.longWindow?.resetsAt == resets.addingTimeInterval(86_400))
        }
    }

    @Test(
        "Tokens per day: a day's newer count replaces the older; filtered by day and account; the read time is kept even with no day",
        arguments: StoreBackend.allCases)
    func dailyTokens(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"))
            let b = try await store.add(Identity("b@example.com", marker: "b"))
            try await store.recordDailyTokens([("2026-11-24", 10), ("2026-11-25", 2_234_567_890)], for: a, at: Self.base)
            try await store.recordDailyTokens([("2026-11-25", 20), ("2026-11-26", 5)], for: a, at: Self.base.addingTimeInterval(3600))
            try await store.recordDailyTokens([], for: b, at: Self.base)
            #expect(
                try await store.dailyTokens(since: nil, accounts: nil)
                    == [
                        DailyTokens(accountID: a.id, day: "2026-11-24", tokens: 10), DailyTokens(accountID: a.id, day: "2026-11-25", tokens: 20),
                        DailyTokens(accountID: a.id, day: "2026-11-26", tokens: 5),
                    ])
            #expect(try await store.dailyTokens(since: "2026-11-25", accounts: [a.id]).map(\.day) == ["2026-11-25", "2026-11-26"])
            #expect(try await store.dailyTokens(since: nil, accounts: [b.id]).isEmpty)
            #expect(try await store.dailyTokensReadAt() == [a.id: Self.base.addingTimeInterval(3600), b.id: Self.base])
        }
    }

    @Test("Pruning deletes readings before a time and says how many", arguments: StoreBackend.allCases)
    func prune(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"))
            for hour in 0..<5 {
                try await store.recordUsage(
                    [Self.reading(Double(hour), 1, resets: Self.base)], for: a, source: .poll, at: Self.base.addingTimeInterval(3600 * Double(hour)))
            }
            #expect(try await store.pruneUsage(olderThan: Self.base.addingTimeInterval(3600 * 2)) == 2)
            #expect(try await store.usageSamples(for: a, since: nil, until: nil).count == 3)
            #expect(try await store.pruneUsage(olderThan: Self.base) == 0)
        }
    }

    @Test("Readings fold by account then time, filtered by time and accounts, codex only", arguments: StoreBackend.allCases)
    func reduce(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"))
            let b = try await store.add(Identity("b@example.com", marker: "b"))
            let resets = Self.base.addingTimeInterval(18_000)
            for (account, offsets) in [(b, [30.0, 10]), (a, [20.0, 0, 40])] {
                for offset in offsets {
                    try await store.recordUsage(
                        [Self.reading(offset, 1, resets: resets)], for: account, source: .poll, at: Self.base.addingTimeInterval(offset))
                }
            }
            try await store.recordUsage(
                [Self.reading(1, 1, resets: resets, limitID: "other")], for: a, source: .poll, at: Self.base.addingTimeInterval(5))
            let all = try await store.reduceUsageReadings(since: nil, until: nil, accounts: nil, into: [UsageReading]()) { $0.append($1) }
            let expected = [(a.id, 0.0), (a.id, 20), (a.id, 40), (b.id, 10), (b.id, 30)].sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            #expect(all.map(\.accountID) == expected.map(\.0))
            #expect(all.map(\.observedAt) == expected.map { Self.base.timeIntervalSince1970 + $0.1 })
            #expect(all.map(\.fiveHourUsed) == expected.map { Optional($0.1) })
            #expect(all.allSatisfy { $0.fiveHourResetsAt == Int64(resets.timeIntervalSince1970) })
            let some = try await store.reduceUsageReadings(
                since: Self.base.addingTimeInterval(10), until: Self.base.addingTimeInterval(40), accounts: [a.id], into: 0
            ) { count, _ in count += 1 }
            #expect(some == 1)
        }
    }

    @Test("Windows are told apart by reset time with their peak; usage by machine names the store's machine", arguments: StoreBackend.allCases)
    func windowsAndMachines(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"))
            let firstReset = Self.base.addingTimeInterval(3600)
            let secondReset = Self.base.addingTimeInterval(3600 + 18_000)
            try await store.recordUsage([Self.reading(40, 10, resets: firstReset)], for: a, source: .poll, at: Self.base)
            try await store.recordUsage(
                [Self.reading(90, 12, resets: firstReset, reached: true)], for: a, source: .poll, at: Self.base.addingTimeInterval(60))
            try await store.recordUsage([Self.reading(5, 13, resets: secondReset)], for: a, source: .poll, at: Self.base.addingTimeInterval(4000))
            let windows = try await store.usageWindows(since: nil, until: nil, accounts: [a.id])
            let fiveHour = windows.filter { $0.kind == .fiveHour }.sorted { $0.resetsAt < $1.resetsAt }
            #expect(fiveHour.map(\.resetsAt) == [firstReset, secondReset])
            #expect(fiveHour.map(\.peakPercent) == [90, 5])
            #expect(fiveHour.map(\.samples) == [2, 1])
            #expect(fiveHour.map(\.limitReached) == [1, 0])
            #expect(fiveHour.first?.firstSample == Self.base)
            #expect(fiveHour.first?.lastSample == Self.base.addingTimeInterval(60))
            #expect(windows.filter { $0.kind == .weekly }.count == 2)

            let machines = try await store.usageByMachine(since: nil, until: nil, accounts: nil)
            #expect(machines.count == 1)
            #expect(machines.first?.machine == contract.machineName)
            #expect(machines.first?.samples == 3)
            #expect(machines.first?.fiveHourPeak == 90)
            #expect(machines.first?.weeklyPeak == 13)
            #expect(try await store.usageByMachine(since: Self.base.addingTimeInterval(10_000), until: nil, accounts: nil).isEmpty)
        }
    }

    @Test("A working poll now clears a poll failure's note; older readings and other notes stay", arguments: StoreBackend.allCases)
    func pollClearsItsFailure(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"))
            try await store.recordFailure(of: a, message: UsageSample.pollFailurePrefix + ": timed out", event: .refreshFailed)
            try await store.recordUsage([Self.reading(1, 1, resets: Self.base)], for: a, source: .poll, at: Self.base)
            #expect(try await store.account(id: a.id).lastError != nil)
            try await store.recordUsage([Self.reading(1, 1, resets: Date(timeIntervalSinceNow: 3600))], for: a, source: .poll)
            #expect(try await store.account(id: a.id).lastError == nil)
            try await store.recordFailure(of: a, message: "the refresh failed", event: .refreshFailed)
            try await store.recordUsage([Self.reading(1, 1, resets: Date(timeIntervalSinceNow: 3600))], for: a, source: .poll)
            #expect(try await store.account(id: a.id).lastError == "the refresh failed")
        }
    }
}

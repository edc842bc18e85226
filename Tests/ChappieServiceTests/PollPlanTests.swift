import ChappieCore
@testable import ChappieService
import Foundation
import Testing

@Suite("The daemon's poll plan: the interval, sooner near the limit, readings of any process")
struct PollPlanTests {
    private let plan = PollPlan(interval: .seconds(600), nearLimitInterval: .seconds(60), nearLimitPercent: 80)
    private let start = Date(timeIntervalSince1970: 1_800_000_000)

    private func account(_ id: Int64) throws -> Account {
        Account(
            id: id, uuid: UUID(), name: try AccountName("a\(id)"),
            info: ChappieAccountInfo(email: nil, userID: nil, accountID: nil, plan: nil, isFedRAMPAccount: false),
            status: .ok, accessTokenExpiresAt: nil, lastRefreshAt: nil, lastError: nil, codexHome: nil, reservePercent: nil,
            createdAt: start, updatedAt: start, isActive: false, maxLeases: 1)
    }

    private func reading(_ id: Int64, used: Double, at date: Date, limitReached: Bool = false) -> UsageSample {
        UsageSample(
            accountID: id, observedAt: date, source: .poll, limitID: "codex",
            snapshot: ChappieUsageLimitSnapshot(
                limitID: "codex", plan: nil,
                shortWindow: ChappieUsageWindow(usedPercent: used, windowMinutes: 300, resetsAt: date.addingTimeInterval(3600)), longWindow: nil,
                limitReached: limitReached))
    }

    @Test("No reading: due at once. Below 80 %: due after the interval. From 80 %, full included: due after a minute, or at a full window's reset")
    func dueTimes() throws {
        let accounts = try (1...4).map(account)
        let latest: [Int64: UsageSample] = [
            2: reading(2, used: 40, at: start), 3: reading(3, used: 85, at: start), 4: reading(4, used: 10, at: start, limitReached: true),
        ]
        #expect(plan.due(accounts, latest: latest, now: start).map(\.id) == [1])
        #expect(plan.due(accounts, latest: latest, now: start.addingTimeInterval(59)).map(\.id) == [1])
        #expect(plan.due(accounts, latest: latest, now: start.addingTimeInterval(60)).map(\.id) == [1, 3, 4])
        #expect(plan.due(accounts, latest: latest, now: start.addingTimeInterval(599)).map(\.id) == [1, 3, 4])
        #expect(plan.due(accounts, latest: latest, now: start.addingTimeInterval(600)).map(\.id) == [1, 2, 3, 4])
        // Full, its window resetting in 30 seconds: due at the reset.
        let resetting = [
            Int64(4): UsageSample(
                accountID: 4, observedAt: start, source: .poll, limitID: "codex",
                snapshot: ChappieUsageLimitSnapshot(
                    limitID: "codex", plan: nil,
                    shortWindow: ChappieUsageWindow(usedPercent: 100, windowMinutes: 300, resetsAt: start.addingTimeInterval(30)),
                    longWindow: nil))
        ]
        #expect(plan.due([accounts[3]], latest: resetting, now: start.addingTimeInterval(29)).isEmpty)
        #expect(plan.due([accounts[3]], latest: resetting, now: start.addingTimeInterval(30)).count == 1)
    }

    @Test("A reading another process stored makes the account fresh, whoever took it")
    func othersReadings() throws {
        let accounts = [try account(1)]
        let polledByOthers = [Int64(1): reading(1, used: 30, at: start.addingTimeInterval(500))]
        #expect(plan.due(accounts, latest: polledByOthers, now: start.addingTimeInterval(700)).isEmpty)
        #expect(plan.due(accounts, latest: polledByOthers, now: start.addingTimeInterval(1100)).count == 1)
    }
}

@Suite("The daemon's auto-switch rule: once per limit event of the active account")
struct AutoSwitchRuleTests {
    private let start = Date(timeIntervalSince1970: 1_800_000_000)

    private func active() throws -> Account {
        Account(
            id: 7, uuid: UUID(), name: try AccountName("work"),
            info: ChappieAccountInfo(email: nil, userID: nil, accountID: nil, plan: nil, isFedRAMPAccount: false),
            status: .ok, accessTokenExpiresAt: nil, lastRefreshAt: nil, lastError: nil, codexHome: nil, reservePercent: nil,
            createdAt: start, updatedAt: start, isActive: true, maxLeases: 1)
    }

    private func reading(five: Double, week: Double = 10, resetsIn: TimeInterval = 3600, limitReached: Bool = false) -> UsageSample {
        UsageSample(
            accountID: 7, observedAt: start, source: .poll, limitID: "codex",
            snapshot: ChappieUsageLimitSnapshot(
                limitID: "codex", plan: nil,
                shortWindow: ChappieUsageWindow(usedPercent: five, windowMinutes: 300, resetsAt: start.addingTimeInterval(resetsIn)),
                longWindow: ChappieUsageWindow(usedPercent: week, windowMinutes: 10080, resetsAt: start.addingTimeInterval(86400)),
                limitReached: limitReached))
    }

    @Test("No event below 100 %; one at 100 % or when the limit is reached; the same window is one event, the next window another")
    func events() throws {
        let account = try active()
        #expect(AutoSwitcher.limitEvent(of: account, reading: nil) == nil)
        #expect(AutoSwitcher.limitEvent(of: account, reading: reading(five: 99.9)) == nil)
        let full = try #require(AutoSwitcher.limitEvent(of: account, reading: reading(five: 100)))
        #expect(AutoSwitcher.limitEvent(of: account, reading: reading(five: 40, limitReached: true)) == full)
        // The weekly window binding at 100 %: an event of its own.
        let weekly = try #require(AutoSwitcher.limitEvent(of: account, reading: reading(five: 10, week: 100)))
        #expect(weekly != full)
        let next = try #require(AutoSwitcher.limitEvent(of: account, reading: reading(five: 100, resetsIn: 3600 + 18000)))
        #expect(next != full)
        // A later reading of the same full window is the same event: the daemon switches once for it.
        var later = reading(five: 100)
        later.observedAt = start.addingTimeInterval(120)
        #expect(AutoSwitcher.limitEvent(of: account, reading: later) == full)
    }
}

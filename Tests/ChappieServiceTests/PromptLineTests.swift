import ChappieCore
import ChappieService
import Foundation
import Testing

@Suite("chappie prompt's line: placeholders, a missing reading, hostile text")
struct PromptLineTests {
    private func account(_ name: String = "work") throws -> Account {
        Account(
            id: 1, uuid: UUID(), name: try AccountName(name),
            info: ChappieAccountInfo(email: "w@example.com", userID: "u", accountID: "a", plan: .plus), status: .ok,
            accessTokenExpiresAt: nil, lastRefreshAt: nil, lastError: nil, codexHome: nil, reservePercent: nil, createdAt: Date(),
            updatedAt: Date(), isActive: true)
    }

    private func reading(five: Double, weekly: Double, reset: Date?) -> ChappieUsageLimitSnapshot {
        ChappieUsageLimitSnapshot(
            limitID: "codex", plan: .plus, shortWindow: ChappieUsageWindow(usedPercent: five, windowMinutes: 300, resetsAt: reset),
            longWindow: ChappieUsageWindow(usedPercent: weekly, windowMinutes: 10080, resetsAt: nil), credits: nil, limitReached: false)
    }

    @Test("The default line names the account, the binding window, its use and its reset")
    func defaultLine() throws {
        let utc = try #require(TimeZone(identifier: "UTC"))
        let reset = Date(timeIntervalSince1970: 1_795_000_000)  // 11:06 UTC
        let before = reset.addingTimeInterval(-3600)
        let line = PromptLine.render(
            PromptLine.defaultFormat, account: try account(), reading: reading(five: 41.6, weekly: 20, reset: reset), timeZone: utc, now: before)
        #expect(line == "work 5h 42% ↻11:06")
        // No reset time: that word is left out, the rest stays.
        #expect(
            PromptLine.render(PromptLine.defaultFormat, account: try account(), reading: reading(five: 41.6, weekly: 20, reset: nil)) == "work 5h 42%"
        )
        // A reading older than its window's reset: the window has started afresh.
        let after = reset.addingTimeInterval(60)
        #expect(
            PromptLine.render(PromptLine.defaultFormat, account: try account(), reading: reading(five: 41.6, weekly: 20, reset: reset), now: after)
                == "work 5h 0%")
        // {left} counts the reserve, as guard does.
        var reserved = try account()
        reserved.reservePercent = 80
        #expect(PromptLine.render("{left}", account: reserved, reading: reading(five: 50, weekly: 10, reset: nil)) == "30")
        let weekly = PromptLine.render(
            "{account}:{window} {left}% left ({plan})", account: try account(), reading: reading(five: 10, weekly: 75, reset: nil))
        #expect(weekly == "work:wk 25% left (Plus)")
        // No reading: the values there are.
        #expect(PromptLine.render(PromptLine.defaultFormat, account: try account(), reading: nil) == "work")
    }

    @Test("A format with an unknown placeholder or an open brace is refused; use out of range is clamped")
    func formats() throws {
        #expect(PromptLine.problem(with: PromptLine.defaultFormat) == nil)
        #expect(PromptLine.problem(with: "{acount}")?.contains("{acount}") == true)
        #expect(PromptLine.problem(with: "{account") != nil)
        let line = PromptLine.render("{used}/{left}", account: try account(), reading: reading(five: 250, weekly: -5, reset: nil))
        #expect(line == "100/0")
        // A plan is a server's text: no control character reaches the terminal.
        var hostile = try account()
        hostile.info.plan = ChappiePlan(rawValue: "\u{1B}]0;pwned\u{07}pro")
        #expect(!PromptLine.render("{plan}", account: hostile, reading: nil).unicodeScalars.contains { $0.value < 0x20 })
    }
}

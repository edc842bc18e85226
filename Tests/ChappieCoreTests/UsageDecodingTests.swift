import ChappieCore
import ChappieTestSupport
import Foundation
import Testing

@Suite("Usage replies decode leniently, windows classified by length")
struct UsageDecodingTests {
    @Test("Plus: both windows, 5-hour short and weekly long")
    func plus() throws {
        let snapshots = try ChappieUsageLimitSnapshot.decodeUsage(try Fixtures.data("wham-usage-plus.json"))
        #expect(snapshots.count == 1)
        let main = try #require(snapshots.first)
        #expect(main.limitID == "codex")
        #expect(main.plan == .plus)
        #expect(main.shortWindow == ChappieUsageWindow(usedPercent: 37, windowMinutes: 300, resetsAt: Date(timeIntervalSince1970: 1_795_009_120)))
        #expect(main.longWindow?.usedPercent == 61)
        #expect(main.longWindow?.windowMinutes == 10080)
        #expect(main.bindingWindow == main.longWindow)
        #expect(main.credits == ChappieCredits(hasCredits: false, unlimited: false, balance: "0"))
        // The seeds' names: primary is the 5-hour window, secondary the weekly one.
        #expect(main.primary == main.shortWindow)
        #expect(main.secondary == main.longWindow)
    }

    @Test("A weekly-only plan sends its weekly window in primary_window: it is the long window")
    func weeklyOnly() throws {
        let main = try #require(try ChappieUsageLimitSnapshot.decodeUsage(try Fixtures.data("wham-usage-weekly-only.json")).first)
        #expect(main.shortWindow == nil)
        #expect(main.longWindow?.windowMinutes == 10080)
        #expect(main.longWindow?.usedPercent == 12)
        #expect(main.plan == .free)
        #expect(main.bindingWindow == main.longWindow)
        // As the service sends it: the week is primary, and there is no secondary.
        #expect(main.primary == main.longWindow)
        #expect(main.secondary == nil)
    }

    @Test("Limit reached: the reached type, credits with a balance, and the additional limit as its own id")
    func limitReached() throws {
        let snapshots = try ChappieUsageLimitSnapshot.decodeUsage(try Fixtures.data("wham-usage-limit-reached.json"))
        #expect(snapshots.map(\.limitID) == ["codex", "codex_bengalfox"])
        #expect(snapshots[0].limitReached)
        #expect(snapshots[0].rateLimitReachedType == "rate_limit_reached")
        #expect(snapshots[0].credits?.balance == "9.99")
        #expect(snapshots[0].shortWindow?.usedPercent == 100)
        #expect(snapshots[1].limitName == "gpt-5.2-codex-sonic")
        #expect(snapshots[1].shortWindow?.usedPercent == 5)
        #expect(snapshots[1].longWindow == nil)
    }

    @Test("All nulls and an unknown plan with unknown fields decode without error")
    func nullsAndUnknowns() throws {
        let nulls = try #require(try ChappieUsageLimitSnapshot.decodeUsage(try Fixtures.data("wham-usage-nulls.json")).first)
        #expect(nulls.plan == .unknown("guest"))
        #expect(nulls.shortWindow == nil && nulls.longWindow == nil && nulls.credits == nil)
        #expect(nulls.bindingWindow == nil)
        let unknown = try #require(try ChappieUsageLimitSnapshot.decodeUsage(try Fixtures.data("wham-usage-unknown-plan.json")).first)
        #expect(unknown.plan == .enterpriseCbpUsageBased)
        #expect(unknown.credits?.unlimited == true)
        #expect(unknown.credits?.balance == nil)
        // A window that is there but cannot be read is no window the reply lacks: how full it is is unknown.
        #expect(throws: UsageDecodingError.unreadableWindow("primary_window")) {
            try ChappieUsageLimitSnapshot.decodeUsage(Data(#"{"plan_type":"quorum","rate_limit":{"primary_window":{"used_percent":"x"}}}"#.utf8))
        }
        #expect(throws: UsageDecodingError.unreadableWindow("secondary_window")) {
            try ChappieUsageLimitSnapshot.decodeUsage(Data(#"{"rate_limit":{"secondary_window":[]}}"#.utf8))
        }
        #expect(throws: UsageDecodingError.unreadableWindow("primary_window")) {
            try ChappieUsageLimitSnapshot.decodeUsage(Data(#"{"rate_limit":{"primary_window":{"used_percent":-5}}}"#.utf8))
        }
        #expect(throws: UsageDecodingError.notJSONObject) {
            try ChappieUsageLimitSnapshot.decodeUsage(Data(#"{"rate_limit":{"primary_window":{"used_percent":100,"used_percent":10}}}"#.utf8))
        }
        // An additional limit's unreadable window fails nothing: the main limit is what guard judges.
        let extra = try ChappieUsageLimitSnapshot.decodeUsage(
            Data(
                #"{"rate_limit":{"primary_window":{"used_percent":5}},"additional_rate_limits":[{"limit_name":"x","rate_limit":{"primary_window":{"used_percent":"?"}}}]}"#
                    .utf8))
        #expect(extra.count == 2 && (extra[0].shortWindow ?? extra[0].longWindow)?.usedPercent == 5, "\(extra)")
        #expect(extra.count == 2 && extra[1].shortWindow == nil && extra[1].longWindow == nil, "\(extra)")
        #expect(throws: UsageDecodingError.self) { try ChappieUsageLimitSnapshot.decodeUsage(Data("[]".utf8)) }
        #expect(throws: UsageDecodingError.self) { try ChappieUsageLimitSnapshot.decodeUsage(Data("{trunc".utf8)) }
    }
}

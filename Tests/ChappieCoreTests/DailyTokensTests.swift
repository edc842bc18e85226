import ChappieCore
import ChappieTestSupport
import Foundation
import Testing

@Suite("Tokens per day from wham/profiles/me")
struct DailyTokensTests {
    @Test("The fixture's days, oldest first; broken buckets skipped")
    func fixture() throws {
        let days = try #require(DailyTokens.days(fromProfile: try Fixtures.data("wham-profiles-me.json")))
        #expect(days.map(\.day) == ["2026-11-24", "2026-11-25", "2026-11-26"])
        #expect(days.map(\.tokens) == [515_522_364, 1_951_152_385, 0])
    }

    @Test(
        "What is not a day or a count is left out; a reply without statistics is none",
        arguments: [
            (#"{"stats":{"daily_usage_buckets":[{"start_date":"2026-02-29","tokens":1},{"start_date":"2028-02-29T00:00:00Z","tokens":2}]}}"#, 1),
            (#"{"stats":{"daily_usage_buckets":[{"start_date":"2026-11-26","tokens":true},{"start_date":"2026-11-26","tokens":-1}]}}"#, 0),
            (#"{"stats":{"daily_usage_buckets":[{"start_date":"2026-11-26","tokens":1.5},{"start_date":"26-11-2026","tokens":3}]}}"#, 0),
            (#"{"stats":{"daily_usage_buckets":[{"start_date":"2026-11-26","tokens":1e30}]}}"#, 0),
            (#"{"stats":{}}"#, 0),
        ])
    func refused(_ body: String, _ kept: Int) throws {
        #expect(try #require(DailyTokens.days(fromProfile: Data(body.utf8))).count == kept)
    }

    @Test("Not a profile, or statistics unavailable: nil")
    func none() {
        for body in ["[]", "{}", "not json", #"{"stats":{"daily_usage_buckets":[]},"metadata":{"stats_error":"unavailable"}}"#] {
            #expect(DailyTokens.days(fromProfile: Data(body.utf8)) == nil, "\(body)")
        }
        #expect(DailyTokens.days(fromProfile: Data(#"{"stats":{"daily_usage_buckets":[]},"metadata":{"stats_error":null}}"#.utf8))?.isEmpty == true)
    }
}

@Suite("Token counts read back from a store stay within range; totals never trap")
struct DailyTokensRangeTests {
    @Test("A count from a hostile row is held to 0…maximumPerDay; sums stop at Int.max")
    func clamped() {
        #expect(DailyTokens(accountID: 1, day: "2026-11-26", tokens: 5_000_000_000_000_000_000).tokens == DailyTokens.maximumPerDay)
        #expect(DailyTokens(accountID: 1, day: "2026-11-26", tokens: -4).tokens == 0)
        #expect(DailyTokens.adding(Int.max - 1, 5) == Int.max)
        #expect(DailyTokens.adding(40, 2) == 42)
    }
}

import ChappieCore
import ChappieTestSupport
import Foundation
import Testing

@Suite("The rate limits Codex writes into its rollouts")
struct CodexRolloutTests {
    private func lines(_ text: String) -> [Substring] { text.split(separator: "\n") }

    @Test("Codex 0.147's and 0.163's real rollouts: the token_count event's limits, at its time", arguments: ["0.147.0", "0.163.0"])
    func realRollouts(_ version: String) throws {
        let text = try String(contentsOf: Fixtures.codex.appendingPathComponent("rollout-\(version).jsonl"), encoding: .utf8)
        let newest = try #require(CodexRollout.newestRateLimits(in: lines(text)))
        #expect(newest.snapshot.limitID == "codex")
        #expect(newest.snapshot.shortWindow?.usedPercent == 2 && newest.snapshot.shortWindow?.windowMinutes == 300)
        #expect(newest.snapshot.longWindow?.usedPercent == 0.5 && newest.snapshot.longWindow?.windowMinutes == 10080)
        #expect(newest.snapshot.plan == .plus && !newest.snapshot.limitReached)
        #expect(newest.snapshot.shortWindow?.resetsAt.map { $0 > newest.at } == true)
        #expect(newest.at.timeIntervalSince1970 > 1_796_000_000)
    }

    @Test("The newest line wins; a limit reached is one; lines that are not such events, or are cut, are passed over")
    func hostileLines() throws {
        let event = { (at: String, used: Double, reached: String) in
            #"{"timestamp":"\#(at)","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"limit_id":"codex","primary":{"used_percent":\#(used),"window_minutes":300,"resets_at":1796545665},"secondary":null,"rate_limit_reached_type":\#(reached)}}}"#
        }
        let text = [
            event("2026-12-06T03:27:46.178Z", 40, "null"),
            event("2026-12-06T03:29:00Z", 100, #""rate_limit_reached""#),
            #"{"timestamp":"2026-12-06T03:30:00Z","type":"response_item","payload":{"type":"token_count","rate_limits":{}}}"#,
            #"{"timestamp":"not a time","type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":{"used_percent":1}}}}"#,
            #"{"timestamp":"2026-12-06T03:31:00Z","type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":{"used_percent":-5}}}}"#,
            #"{"timestamp":"2026-12-06T03:32:00Z","type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":{"used_pe"#,
        ].joined(separator: "\n")
        let newest = try #require(CodexRollout.newestRateLimits(in: lines(text)))
        #expect(newest.snapshot.shortWindow?.usedPercent == 100)
        #expect(newest.snapshot.limitReached && newest.snapshot.rateLimitReachedType == "rate_limit_reached")
        #expect(newest.at == Date(timeIntervalSince1970: 1_796_527_740))
        #expect(CodexRollout.newestRateLimits(in: lines("{}\n[]\nnot json")) == nil)
    }
}

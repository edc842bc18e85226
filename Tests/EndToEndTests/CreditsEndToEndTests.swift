import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie credits: banked rate-limit resets, listed and redeemed on request")
struct CreditsEndToEndTests {
    @Test("Lists an account's credits; redeem resets a full window once, retries with the same key, and says plainly when there is nothing to redeem")
    func listAndRedeem() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            let id = try #require(try await testbed.control("/_emulator/accounts").string(0, "account_id"))
            let none = try await testbed.chappie(["credits"])
            #expect(none.status == 0, "\(none.stderr)")
            #expect(none.stdout.contains("work: 0 reset credits available"), "\(none.stdout)")
            #expect(try await testbed.chappie(["credits", "redeem", "work"]).stdout.contains("no reset credit is available"))

            _ = try await testbed.control("/_emulator/accounts/\(id)/reset-credits", method: "POST", body: #"{"count":1}"#)
            let listed = try await testbed.chappie(["credits", "work", "--json"])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any])
            #expect(object["available"] as? Int == 1)
            #expect((object["credits"] as? [[String: Any]])?.first?["status"] as? String == "available")

            // Empty windows: nothing to reset, and the credit is kept.
            let empty = try await testbed.chappie(["credits", "redeem", "work"])
            #expect(empty.status == 1)
            #expect(empty.stdout.contains("nothing to reset"), "\(empty.stdout)")

            // A full window: the service redeems the credit but its answer is lost on the way (cut
            // short). The retry carries the same key, so it gets that first answer, `reset`; a fresh
            // key would have got `already_redeemed`.
            _ = try await testbed.control("/_emulator/accounts/\(id)/usage", method: "POST", body: #"{"five_hour_used_percent":100}"#)
            let consume = "/backend-api/wham/rate-limit-reset-credits/consume"
            let consumedBefore = try await testbed.control("/_emulator/stats").int("requests", consume) ?? 0
            _ = try await testbed.control("/_emulator/faults", method: "POST", body: #"{"kind":"truncated","count":1,"path":"\#(consume)"}"#)
            let redeemed = try await testbed.chappie(["credits", "redeem", "work", "--json"])
            #expect(redeemed.status == 0, "\(redeemed.stdout)\(redeemed.stderr)")
            #expect(redeemed.stdout.contains("\"outcome\" : \"reset\""), "\(redeemed.stdout)")
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("requests", consume) == consumedBefore + 2)
            #expect(stats.int("reset_credit_redemptions", "reset") == 1)
            #expect(stats.int("reset_credit_redemptions", "already_redeemed") == nil)
            let accounts = try await testbed.control("/_emulator/accounts")
            #expect(accounts.value([0, "five_hour", "used_percent"]) as? Int == 0 || accounts.value([0, "five_hour_used_percent"]) as? Double == 0)
            #expect(try await testbed.chappie(["credits", "work"]).stdout.contains("work: 0 reset credits available"))
            // The audit log has it.
            #expect(try await testbed.chappie(["log"]).stdout.contains("credit_redeemed"))
        }
    }

    @Test("Two redemptions of one credit at once: one resets the window, the other says plainly the credit was redeemed already")
    func redeemedAlready() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            let id = try #require(try await testbed.control("/_emulator/accounts").string(0, "account_id"))
            _ = try await testbed.control("/_emulator/accounts/\(id)/reset-credits", method: "POST", body: #"{"count":1}"#)
            _ = try await testbed.control("/_emulator/accounts/\(id)/usage", method: "POST", body: #"{"five_hour_used_percent":100}"#)
            // The first redemption is held at the service after it chose the credit; the second redeems it meanwhile.
            _ = try await testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind":"hold","count":1,"path":"/backend-api/wham/rate-limit-reset-credits/consume"}"#)
            async let first = testbed.chappie(["credits", "redeem", "work"])
            var polls = 0
            while try await testbed.control("/_emulator/stats").int("held") != 1, polls < 2400 {
                polls += 1
                try await Task.sleep(for: .milliseconds(50))
            }
            try #require(try await testbed.control("/_emulator/stats").int("held") == 1, "the first redemption never reached the service")
            let second = try await testbed.chappie(["credits", "redeem", "work"])
            #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
            _ = try await testbed.control("/_emulator/release", method: "POST")
            let late = try await first
            #expect(late.status == 1, "\(late.stdout)\(late.stderr)")
            #expect(late.stdout.contains("work: that credit was redeemed already"), "\(late.stdout)")
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("reset_credit_redemptions", "reset") == 1)
            #expect(stats.int("reset_credit_redemptions", "already_redeemed") == 1)
        }
    }
}

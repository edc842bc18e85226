import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie guard: a CI step's headroom check")
struct GuardEndToEndTests {
    @Test(
        "A window that is there but unreadable (its used_percent a string) is unknown: exit 75, never room",
        arguments: [#""50""#, "null", "true", "-5", "100,\"used_percent\":10"])
    func unreadableWindow(_ used: String) async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            let body =
                #"{"plan_type":"plus","rate_limit":{"allowed":true,"limit_reached":false,"primary_window":{"used_percent":"#
                + used + #","limit_window_seconds":18000,"reset_at":1900000000},"secondary_window":null}}"#
            let fault = try JSONSerialization.data(withJSONObject: ["kind": "status", "status": 200, "path": "/backend-api/wham/usage", "body": body])
            _ = try await testbed.control("/_emulator/faults", method: "POST", body: String(decoding: fault, as: UTF8.self))
            let guarded = try await testbed.chappie(["guard", "work", "--max-age", "0s", "--json"])
            #expect(guarded.status == 75, "\(guarded.stdout) \(guarded.stderr)")
            let verdict = JSONDocument(Data(guarded.stdout.utf8))
            #expect(verdict.string("outcome") == "unknown" && verdict.int("enough") == 0, "\(guarded.stdout)")
            #expect(
                verdict.string("message")?.contains("primary_window has no used_percent of 0 or more") == true
                    || verdict.string("message")?.contains("names a key twice") == true, "\(guarded.stdout)")
        }
    }

    @Test(
        "Exit 0 with enough headroom, 75 with the reset when short, --any names an account with room, 77 for one to sign in again; readings younger than --max-age are not polled"
    )
    func guardExits() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            #expect(try await testbed.chappie(["accounts", "add", "home"]).status == 0)
            #expect(try await testbed.chappie(["accounts", "switch", "work"]).status == 0)
            let accounts = try await testbed.control("/_emulator/accounts")
            let (work, home) = (try #require(accounts.string(0, "account_id")), try #require(accounts.string(1, "account_id")))
            _ = try await testbed.control(
                "/_emulator/accounts/\(work)/usage", method: "POST", body: #"{"five_hour_used_percent":85,"weekly_used_percent":30}"#)
            _ = try await testbed.control(
                "/_emulator/accounts/\(home)/usage", method: "POST", body: #"{"five_hour_used_percent":10,"weekly_used_percent":40}"#)
            func polls() async throws -> Int { try await testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") ?? 0 }

            // The active account, 15 % left in its 5-hour window.
            let enough = try await testbed.chappie(["guard"])
            #expect(enough.status == 0, "\(enough.stderr)")
            #expect(enough.stderr.contains("work has 15 % headroom in the 5-hour window (needs 10 %)"), "\(enough.stderr)")
            // A reading younger than --max-age (2 minutes by default) is used as it is.
            let before = try await polls()
            let short = try await testbed.chappie(["guard", "--min-headroom", "20", "--max-age", "1h"])
            #expect(short.status == 75)
            #expect(short.stderr.contains("work has 15 % headroom in the 5-hour window, under 20 %; it resets at "), "\(short.stderr)")
            #expect(try await polls() == before)
            // --max-age 0s polls again.
            _ = try await testbed.chappie(["guard", "--max-age", "0s"])
            #expect(try await polls() == before + 1)

            // Any account will do: the one with the most headroom is named.
            let any = try await testbed.chappie(["guard", "--any", "--min-headroom", "50", "--json"])
            #expect(any.status == 0, "\(any.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(any.stdout.utf8)) as? [String: Any])
            #expect(object["account"] as? String == "home")
            #expect(object["enough"] as? Bool == true)
            #expect(object["window"] as? String == "weekly")
            #expect(try await testbed.chappie(["guard", "--any", "--min-headroom", "70"]).status == 75)
            #expect(try await testbed.chappie(["guard", "--any", "home"]).status == 2)
            #expect(try await testbed.chappie(["guard", "--min-headroom", "101"]).status == 2)

            // No reading to be had: 75, saying why.
            _ = try await testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind":"status","status":500,"count":1,"path":"/backend-api/wham/usage"}"#)
            let unknown = try await testbed.chappie(["guard", "--max-age", "0s", "--json"])
            #expect(unknown.status == 75)
            #expect(unknown.stdout.contains("\"outcome\" : \"unknown\""), "\(unknown.stdout)")

            // An account the issuer signed out.
            _ = try await testbed.control(
                "/_emulator/faults", method: "POST",
                body: #"{"kind":"status","status":400,"path":"/oauth/token","body":"{\"error\":\"invalid_grant\"}"}"#)
            #expect(try await testbed.chappie(["refresh", "home"]).status == 77)
            let signedOut = try await testbed.chappie(["guard", "home"])
            #expect(signedOut.status == 77)
            #expect(signedOut.stderr.contains("chappie accounts add home"), "\(signedOut.stderr)")
        }
    }
}

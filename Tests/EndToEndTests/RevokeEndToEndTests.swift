import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie accounts remove --revoke, run as a user runs it", .tags(.slow))
struct RevokeEndToEndTests {
    @Test("--revoke revokes at the issuer before removing; a failed revocation removes nothing unless --force")
    func removeRevoking() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let chappie = { (arguments: [String]) in try await testbed.chappie(arguments) }
            #expect(try await chappie(["accounts", "add", "work"]).status == 0)
            #expect(try await chappie(["accounts", "add", "home"]).status == 0)
            #expect(try await chappie(["accounts", "remove", "work", "--yes", "--force"]).status == 2)

            // The issuer fails: nothing is removed, and the exit code is the failure's class (retry later).
            _ = try await testbed.control("/_emulator/faults", method: "POST", body: #"{"kind":"status","status":503,"path":"/oauth/revoke"}"#)
            let failed = try await chappie(["accounts", "remove", "work", "--yes", "--revoke"])
            #expect(failed.status == 75, "\(failed.stderr)")
            #expect(failed.stderr.contains("Nothing was removed"))
            #expect(try await chappie(["accounts", "list"]).stdout.contains("work"))

            // --force removes it anyway, with a warning.
            _ = try await testbed.control("/_emulator/faults", method: "POST", body: #"{"kind":"status","status":503,"path":"/oauth/revoke"}"#)
            let forced = try await chappie(["accounts", "remove", "work", "--yes", "--revoke", "--force"])
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(forced.stderr.contains("warning: could not revoke work"))
            #expect(!(try await chappie(["accounts", "list"]).stdout.contains("work")))
            #expect(try await testbed.control("/_emulator/stats").int("refresh", "revocations") == 0)

            // It works: the issuer revoked the token family, then the account is gone.
            let revoked = try await chappie(["accounts", "remove", "home", "--yes", "--revoke", "--json"])
            #expect(revoked.status == 0, "\(revoked.stderr)")
            let reply = JSONDocument(Data(revoked.stdout.utf8))
            #expect(reply.string("account") == "home" && reply.bool("removed") == true)
            #expect(reply.bool("revoked") == true)
            #expect(try await testbed.control("/_emulator/stats").int("refresh", "revocations") == 1)
            #expect(!(try await chappie(["accounts", "list"]).stdout.contains("home")))
        }
    }
}

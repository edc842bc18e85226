import ChappieTestSupport
import Foundation
import Testing

@Suite("--verbose: the libraries log requests, lock waits and refresh decisions, never a token", .tags(.slow))
struct VerboseEndToEndTests {
    @Test(
        "Two verbose token commands race for one expiring account: requests by host and path, one waits for the lock and takes the other's tokens",
        .timeLimit(.minutes(10)))
    func verboseRace() async throws {
        let setup = try await ChappieTestbed.start(
            emulatorArguments: ["--auto-approve", "--auto-approve-delay", "0", "--device-code-interval", "1", "--access-token-ttl", "12"])
        try await whileRunning(setup) {
            #expect(try await setup.chappie(["accounts", "add", "a"]).status == 0)
            // Tokens live 12 s and the margin is 6 s: once 7 s have passed the stored token is due, and
            // a new one is not for 6 s. The redemption takes 3 s at the issuer, so the other command waits.
            try await Task.sleep(for: .seconds(7))
            _ = try await setup.control("/_emulator/faults", method: "POST", body: #"{"kind":"latency","ms":3000,"path":"/oauth/token","count":2}"#)
            async let first = setup.chappie(["--verbose", "token", "a", "--margin", "6s"])
            async let second = setup.chappie(["token", "a", "--margin", "6s", "--verbose"])
            let results = try await [first, second]
            for result in results { #expect(result.status == 0, "\(result.stderr)") }
            let logs = results.map(\.stderr)
            let all = logs.joined(separator: "\n")
            let port = URL(string: setup.emulator.issuer)?.port ?? 0
            #expect(all.contains("http=POST http://127.0.0.1:\(port)/oauth/token"))
            #expect(all.contains("status=200"))
            #expect(all.contains("redeeming the refresh token at the issuer"))
            #expect(all.contains("outcome=refreshed"))
            // The refresh lock is held across the slow redemption: the other process waits, then uses the new tokens.
            #expect(logs.contains { $0.contains("waiting for a lock") && $0.contains("lock taken") }, "\(all)")
            #expect(all.contains("another process refreshed while this one waited for the lock"))
            #expect(all.contains("outcome=adopted"))
            let stats = try await setup.control("/_emulator/stats")
            #expect(stats.int("refresh", "redemptions") == 1)
            // Both printed the same new token; it is in no log line.
            let tokens = Set(results.map { $0.stdout.trimmingCharacters(in: .whitespacesAndNewlines) })
            #expect(tokens.count == 1)
            for token in tokens { #expect(!token.isEmpty && !all.contains(token)) }
            #expect(!all.contains("eyJ") && !all.contains("refresh_token="))

            // Without --verbose: no debug line.
            let quiet = try await setup.chappie(["token", "a"])
            #expect(quiet.status == 0)
            #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")
        }
    }
}

import ChappieTestSupport
import Foundation
import Testing

@Suite("The daemon's alerts: thresholds, resets, switches and banked credits, to a webhook and a command", .tags(.slow))
struct AlertsEndToEndTests {
    /// The webhook bodies the emulator received so far, oldest first.
    @Test(
        "Thresholds once per cycle, the switch, a banked credit, a reset: each as the body docs/operations.md shows, to the webhook (retried) and the command; remembered across a restart"
    )
    func lifecycle() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["a", "b"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            #expect(try await testbed.chappie(["accounts", "switch", "a"]).status == 0)
            let accounts = try await testbed.control("/_emulator/accounts")
            let a = try #require(accounts.string(0, "account_id")), b = try #require(accounts.string(1, "account_id"))
            func usage(_ id: String, _ body: String) async throws {
                _ = try await testbed.control("/_emulator/accounts/\(id)/usage", method: "POST", body: body)
            }
            try await usage(a, #"{"five_hour_used_percent":50,"weekly_used_percent":10}"#)
            try await usage(b, #"{"five_hour_used_percent":10,"weekly_used_percent":10}"#)

            // This machine's settings: the webhook shown redacted, the command split with no shell of its own.
            let webhook = testbed.emulator.issuer + "/_emulator/webhooks"
            let set = try await testbed.chappie(["config", "set", "alert-webhook", webhook])
            #expect(set.status == 0, "\(set.stderr)")
            #expect(set.stdout == "alert-webhook = \(testbed.emulator.issuer)/…\n", "\(set.stdout)")
            #expect(try await testbed.chappie(["config", "get", "alert-webhook"]).stdout == "\(testbed.emulator.issuer)/…\n")
            let commandLog = testbed.home.appendingPathComponent("alerts.jsonl")
            #expect(
                try await testbed.chappie(["config", "set", "alert-command", "sh -c 'cat >> \"$0\"; echo >> \"$0\"' \(commandLog.path)"]).status == 0)
            let refused = try await testbed.chappie(["config", "set", "alert-webhook", "http://alerts.example.com/hook"])
            #expect(refused.status == 1 && refused.stderr.contains("must be on loopback"), "\(refused.stderr)")
            #expect(!(try await testbed.chappie(["log"])).stdout.contains("_emulator/webhooks"), "the audit log has the webhook redacted")

            let codexHome = testbed.home.appendingPathComponent("codex")
            let arguments = [
                "--poll-interval", "1s", "--alert-at", "60,90", "--auto-switch", "--codex-home", codexHome.path, "--alert-retry-delay-ms", "100",
            ]
            var daemon = try testbed.startDaemon(arguments)
            try await testbed.waitForSocket()

            // Past 60 %: one threshold alert.
            try await usage(a, #"{"five_hour_used_percent":70}"#)
            let sixty = try await testbed.waitForWebhook("threshold 60") { $0["event"] as? String == "threshold" && $0["account"] as? String == "a" }
            #expect(sixty["window"] as? String == "5h")
            #expect(sixty["threshold"] as? Double == 60)
            #expect(sixty["usedPercent"] as? Double == 70)
            #expect((sixty["resetsAt"] as? String)?.hasSuffix("Z") == true)
            #expect((sixty["message"] as? String)?.contains("a has used 70 % of its 5-hour window (past 60 %)") == true, "\(sixty)")
            #expect(Set(sixty.keys).isSuperset(of: ["event", "account", "window", "usedPercent", "resetsAt", "at", "message"]))

            // To its limit, with a banked credit and two failed deliveries: 90 %, the credit and the switch all arrive.
            _ = try await testbed.control("/_emulator/accounts/\(a)/reset-credits", method: "POST", body: #"{"count":1}"#)
            _ = try await testbed.control("/_emulator/webhooks/fail", method: "POST", body: #"{"count":2}"#)
            try await usage(a, #"{"five_hour_used_percent":100}"#)
            _ = try await testbed.waitForWebhook("threshold 90") { $0["event"] as? String == "threshold" && $0["threshold"] as? Double == 90 }
            let credit = try await testbed.waitForWebhook("credit_available") { $0["event"] as? String == "credit_available" }
            #expect((credit["message"] as? String)?.contains("chappie credits redeem a") == true)
            let switched = try await testbed.waitForWebhook("switched") { $0["event"] as? String == "switched" }
            #expect(switched["from"] as? String == "a" && switched["account"] as? String == "b", "\(switched)")
            let stats = try await testbed.control("/_emulator/stats")
            #expect((stats.int("webhook_attempts") ?? 0) >= 5, "the failed deliveries were tried again")
            #expect(stats.int("reset_credit_redemptions", "reset") == nil, "nothing redeemed without --auto-redeem")
            #expect(await testbed.stop(daemon) == 0)

            // Restarted: nothing fired is said again, and a's full window is remembered for its reset.
            let before = try await testbed.webhookBodies().count
            daemon = try testbed.startDaemon(arguments, log: "daemon2.log")
            try await testbed.waitForSocket()
            try await testbed.waitForLog("daemon2.log", containing: "usage polled")
            try await usage(a, #"{"five_hour_used_percent":0}"#)
            let reset = try await testbed.waitForWebhook("reset") { $0["event"] as? String == "reset" }
            #expect(reset["account"] as? String == "a" && reset["usedPercent"] as? Double == 0)
            let all = try await testbed.webhookBodies()
            #expect(all.count == before + 1, "only the reset after the restart: \(all.suffix(all.count - before))")
            #expect(all.filter { $0["event"] as? String == "threshold" }.count == 2)
            // The command runs beside the webhook's delivery: wait until it has written the reset too
            // (a busy machine may start it after the webhook has answered).
            func commandLines() -> [Substring] {
                ((try? String(contentsOf: commandLog, encoding: .utf8)) ?? "").split(separator: "\n")
            }
            for _ in 0..<600 where commandLines().count < all.count { try await Task.sleep(for: .milliseconds(100)) }
            #expect(await testbed.stop(daemon) == 0)

            // The command got each event the webhook did, and no body carries a token.
            let lines = commandLines()
            #expect(lines.count == all.count, "\(lines)")
            #expect(!lines.contains { $0.contains("eyJ") } && !testbed.log("daemon.log").contains(webhook))
        }
    }

    @Test("A webhook that keeps failing is tried 6 times, logged redacted (at debug too) and counted in /metrics; refreshes and polls go on")
    func failingWebhook() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "a"]).status == 0)
            let a = try #require(try await testbed.control("/_emulator/accounts").string(0, "account_id"))
            _ = try await testbed.control("/_emulator/webhooks/fail", method: "POST", body: #"{"count":100}"#)
            let daemon = try testbed.startDaemon([
                "--poll-interval", "1s", "--alert-webhook", testbed.emulator.issuer + "/_emulator/webhooks?topic=secret", "--alert-retry-delay-ms",
                "100", "--log-level", "debug",
            ])
            try await testbed.waitForSocket()
            _ = try await testbed.control("/_emulator/accounts/\(a)/usage", method: "POST", body: #"{"five_hour_used_percent":85}"#)
            // The polls made once the first delivery was tried, and once the last one failed: the
            // retries (0.1 + 0.2 + 0.4 + 0.8 + 1.6 s) held none of the 1-second polls up.
            for _ in 0..<600 {
                if (try await testbed.control("/_emulator/stats").int("webhook_attempts") ?? 0) >= 1 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            let pollsAtFirstAttempt = try await testbed.daemonStatus().int("daemon", "polls") ?? 0
            try await testbed.waitForLog("daemon.log", containing: "alert webhook failed")
            #expect(try await testbed.control("/_emulator/stats").int("webhook_attempts") == 6)
            #expect(!testbed.log("daemon.log").contains("secret"), "the webhook's path and query are not logged")
            // Its requests at debug name the host only: the path is where ntfy, Slack and Discord keep the secret.
            #expect(
                testbed.log("daemon.log").contains("POST http://127.0.0.1:\(testbed.emulator.port)/…"), "\(testbed.log("daemon.log").suffix(2000))")
            #expect(!testbed.log("daemon.log").contains("_emulator/webhooks"), "the webhook's path is not logged")
            let metrics =
                JSONDocument(
                    Data(
                        try rawSocketExchange(
                            path: testbed.home.appendingPathComponent("chappie.sock").path, payload: #"{"command":"metrics"}"# + "\n"
                        ).utf8)
                )
                .string("metrics") ?? ""
            #expect(metrics.contains(#"chappie_alerts_total{target="webhook",outcome="failed"} 1"#), "\(metrics)")
            let polls = try await testbed.daemonStatus().int("daemon", "polls") ?? 0
            #expect(polls > pollsAtFirstAttempt, "polls went on while the webhook was retried (\(pollsAtFirstAttempt) → \(polls))")
            #expect(await testbed.stop(daemon) == 0)
        }
    }

    @Test(
        "signin_required once for an account whose tokens were revoked; --auto-redeem uses a full account's banked credit (no credit_available then), and its reset follows"
    )
    func signInAndAutoRedeem() async throws {
        let testbed = try await ChappieTestbed.start(emulatorArguments: ChappieTestbed.autoApproving + ["--access-token-ttl", "600"])
        try await whileRunning(testbed) {
            for name in ["gone", "full"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            let accounts = try await testbed.control("/_emulator/accounts")
            let full = try #require(accounts.string(1, "account_id"))
            // gone's refresh token revoked as `codex logout` does; its access token expires within the daemon's margin.
            let codexHome = testbed.home.appendingPathComponent("codex")
            #expect(try await testbed.chappie(["accounts", "switch", "gone", "--codex-home", codexHome.path]).status == 0)
            let refreshToken = try #require(
                JSONDocument(try Data(contentsOf: codexHome.appendingPathComponent("auth.json"))).string("tokens", "refresh_token"))
            _ = try await testbed.control("/oauth/revoke", method: "POST", body: #"{"token":"\#(refreshToken)","token_type_hint":"refresh_token"}"#)
            _ = try await testbed.control("/_emulator/accounts/\(full)/usage", method: "POST", body: #"{"five_hour_used_percent":100}"#)
            _ = try await testbed.control("/_emulator/accounts/\(full)/reset-credits", method: "POST", body: #"{"count":2}"#)

            let daemon = try testbed.startDaemon([
                "--poll-interval", "1s", "--refresh-margin", "15m", "--backoff", "1s", "--auto-redeem", "--alert-webhook",
                testbed.emulator.issuer + "/_emulator/webhooks",
            ])
            try await testbed.waitForSocket()
            let signIn = try await testbed.waitForWebhook("signin_required") { $0["event"] as? String == "signin_required" }
            #expect(signIn["account"] as? String == "gone" && (signIn["message"] as? String)?.contains("chappie accounts add gone") == true)
            let reset = try await testbed.waitForWebhook("reset after the redemption") { $0["event"] as? String == "reset" }
            #expect(reset["account"] as? String == "full")
            try await testbed.waitForLog("daemon.log", containing: "redeemed a reset credit")
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("reset_credit_redemptions", "reset") == 1, "one credit redeemed, the other kept")
            #expect(await testbed.stop(daemon) == 0)
            let bodies = try await testbed.webhookBodies()
            #expect(bodies.filter { $0["event"] as? String == "signin_required" }.count == 1)
            #expect(!bodies.contains { $0["event"] as? String == "credit_available" }, "redeemed, so not told of")
        }
    }

    @Test("Alert options are checked before the daemon starts")
    func refusals() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for (arguments, said) in [
                (["--alert-webhook", "ftp://example.com/x"], "must be an https URL"), (["--alert-webhook", "http://10.0.0.1/x"], "on loopback"),
                (["--alert-at", "80,abc"], "--alert-at takes percents"), (["--alert-at", "0"], "--alert-at takes percents"),
                (["--alert-command", "notify 'unclosed"], "is not a command line"),
            ] {
                let run = try await testbed.chappie(["daemon"] + arguments)
                #expect(run.status == 2, "\(arguments): \(run.stderr)")
                #expect(run.stderr.contains(said), "\(arguments): \(run.stderr)")
            }
        }
    }
}

extension ChappieTestbed {
    /// The bodies the emulator's webhook receiver has taken, oldest first, as JSON objects.
    func webhookBodies() async throws -> [[String: Any]] {
        let bodies = try await control("/_emulator/webhooks").root as? [String] ?? []
        return bodies.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Waits (up to 30 s) for a webhook body matching `match`.
    func waitForWebhook(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ match: ([String: Any]) -> Bool
    ) async throws -> [String: Any] {
        for _ in 0..<300 {
            if let body = try await webhookBodies().first(where: match) { return body }
            try await Task.sleep(for: .milliseconds(100))
        }
        let seen = try await webhookBodies().map { "\($0["event"] ?? "?") \($0["account"] ?? "?")" }
        Issue.record("no \(what) alert within 30 s; received: \(seen)", sourceLocation: sourceLocation)
        throw CancellationError()
    }
}

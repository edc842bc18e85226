import ChappieTestSupport
import Foundation
import Testing

/// A user's first week (issue 41): Codex keeps working through every sign-in, removal and restore.
@Suite("Codex keeps working through a sign-in again, a removal and a restore", .tags(.slow))
struct FirstWeekEndToEndTests {
    private static let quiet: [String: String?] = ["CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_ACCOUNT": nil, "CODEX_HOME": nil]

    private func tokens(in home: URL) -> JSONDocument? {
        FileManager.default.contents(atPath: home.appendingPathComponent("auth.json").path).map(JSONDocument.init)
    }

    private func revoke(_ refreshToken: String, _ testbed: ChappieTestbed) async throws {
        _ = try await testbed.control("/oauth/revoke", method: "POST", body: #"{"token":"\#(refreshToken)","token_type_hint":"refresh_token"}"#)
    }

    /// Whether the emulator serves Codex's usage request with this access token (what `codex` needs).
    private func serves(_ accessToken: String, _ testbed: ChappieTestbed) async throws -> Bool {
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/curl"),
            ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(accessToken)", testbed.emulator.backend + "/wham/usage"])
        return result.stdout == "200"
    }

    @Test("Signing in again, or importing newer tokens, writes them into the Codex home the account owns at once, and says so")
    func renewalRepairsCodexHome() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let codex = testbed.home.appendingPathComponent("codex")
            #expect(try await testbed.chappie(["accounts", "add", "side"]).status == 0)
            #expect(try await testbed.chappie(["accounts", "switch", "side", "--codex-home", codex.path]).status == 0)
            let side = JSONDocument(Data(try await testbed.chappie(["accounts", "show", "side", "--json"]).stdout.utf8))
            let revoked = try #require(tokens(in: codex)?.string("tokens", "refresh_token"))
            try await revoke(revoked, testbed)
            let refresh = try await testbed.chappie(["refresh", "--all"])
            #expect(refresh.status == 77 && refresh.stderr.contains("chappie accounts add side"), "\(refresh.stderr)")

            // The user signs side in again, as the message says.
            let next = #"{"account_id":"\#(side.string("chatgptAccountID") ?? "")","user_id":"\#(side.string("chatgptUserID") ?? "")"}"#
            _ = try await testbed.control("/_emulator/device/next", method: "POST", body: next)
            let renewed = try await testbed.chappie(["accounts", "add", "side"])
            #expect(renewed.status == 0, "\(renewed.stderr)")
            #expect(renewed.stdout.contains("Renewed side"), "\(renewed.stdout)")
            #expect(renewed.stdout.contains("Codex's login in \(codex.path)/auth.json has side's new tokens."), "\(renewed.stdout)")
            let written = try #require(tokens(in: codex))
            let fresh = written.string("tokens", "refresh_token") != revoked
            #expect(fresh)
            #expect(try await serves(try #require(written.string("tokens", "access_token")), testbed))
            let stored = try await testbed.chappie(["token", "side"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let same = stored == written.string("tokens", "access_token")
            #expect(same, "the home holds what chappie holds")

            // Newer tokens imported from elsewhere (another machine's Codex) reach the home too.
            let exported = testbed.home.appendingPathComponent("elsewhere.json")
            let rotated = try await testbed.control(
                "/oauth/token", method: "POST",
                body:
                    #"{"client_id":"\#(codexClientID)","grant_type":"refresh_token","refresh_token":"\#(written.string("tokens", "refresh_token") ?? "")"}"#
            )
            var file = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: codex.appendingPathComponent("auth.json"))) as? [String: Any])
            var inner = try #require(file["tokens"] as? [String: Any])
            for key in ["id_token", "access_token", "refresh_token"] { inner[key] = rotated.string(key) }
            file["tokens"] = inner
            // Refreshed on the other machine after chappie's sign-in here: within the same second, its
            // access token expires at the same second, and its last_refresh is what tells them apart.
            file["last_refresh"] = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2))
            try JSONSerialization.data(withJSONObject: file).write(to: exported)
            let imported = try await testbed.chappie(["accounts", "import", exported.path])
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(
                imported.stdout.contains("Updated side") && imported.stdout.contains("Codex's login in \(codex.path)/auth.json"), "\(imported.stdout)"
            )
            let taken = tokens(in: codex)?.string("tokens", "refresh_token") == rotated.string("refresh_token")
            #expect(taken)
            let again = try await testbed.chappie(["accounts", "import", exported.path])
            #expect(again.status == 0 && again.stdout.contains("side") && again.stdout.contains("already up to date"), "\(again.stdout)")
            #expect(try await testbed.chappie(["refresh", "side"]).status == 0)
            #expect(try await testbed.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)
        }
    }

    @Test(
        "Removing the active account that is Codex's login says so, removes that auth.json and points to switch --best; a switch then replaces a removed account's login without --force"
    )
    func removalSignsCodexOut() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let codex = testbed.home.appendingPathComponent("codex")
            for name in ["user4", "work"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            #expect(try await testbed.chappie(["accounts", "switch", "user4", "--codex-home", codex.path]).status == 0)

            // The confirmation, on a terminal: answered no, nothing changes.
            var environment = Self.quiet
            environment["HOME"] = testbed.userHome.path
            let asked = try await runOnTerminal(
                try BuiltProducts.executable("chappie"), ["accounts", "remove", "user4"] + testbed.service, answers: [("[y/N]", "n\n")],
                environment: environment)
            #expect(asked.status == 1, "\(asked.stdout)")
            #expect(asked.stdout.contains("It is the active account."), "\(asked.stdout)")
            #expect(asked.stdout.contains("It is Codex's login in \(codex.path)/auth.json, which is removed with it"), "\(asked.stdout)")
            #expect(tokens(in: codex) != nil)
            let before = try Data(contentsOf: codex.appendingPathComponent("auth.json"))

            let removed = try await testbed.chappie(["accounts", "remove", "user4", "--revoke", "--yes"])
            #expect(removed.status == 0, "\(removed.stderr)")
            #expect(
                removed.stdout.contains(
                    "Removed its Codex login, \(codex.path)/auth.json: give Codex another account with chappie accounts switch --best"),
                "\(removed.stdout)")
            #expect(tokens(in: codex) == nil)
            let log = try await testbed.chappie(["log", "--kind", "removed", "--account", "user4"])
            #expect(log.stdout.contains("its refresh token was revoked at the issuer"), "\(log.stdout)")

            // A login chappie wrote for an account removed since (an older chappie left it there) is
            // chappie's own to replace: no --force.
            try before.write(to: codex.appendingPathComponent("auth.json"))
            let switched = try await testbed.chappie(["accounts", "switch", "work", "--codex-home", codex.path])
            #expect(switched.status == 0, "\(switched.stderr)")
            let work = JSONDocument(Data(try await testbed.chappie(["accounts", "show", "work", "--json"]).stdout.utf8))
            #expect(tokens(in: codex)?.string("tokens", "account_id") == work.string("chatgptAccountID"))
        }
    }

    @Test("A restore leaves codex-home out and says so; a switch into a home another data directory owns is refused, even for a login both know")
    func restoreKeepsCodexHomeToItsOwner() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let second = try TestTokens.temporaryDirectory("chappie-second-home")
            defer { try? FileManager.default.removeItem(at: second) }
            var environment = Self.quiet
            environment["CHAPPIE_BACKUP_PASSPHRASE"] = "correct horse battery staple"
            func chappie(_ home: URL, _ arguments: [String]) async throws -> ProcessResult {
                try await ChappieRunner(home: home, emulator: testbed.emulator, userHome: testbed.userHome)(arguments, environment: environment)
            }
            let codex = testbed.home.appendingPathComponent("codex")
            #expect(try await chappie(testbed.home, ["accounts", "add", "side"]).status == 0)
            #expect(try await chappie(testbed.home, ["config", "set", "codex-home", codex.path]).status == 0)
            #expect(try await chappie(testbed.home, ["accounts", "switch", "side"]).status == 0)
            let file = second.appendingPathComponent("week.backup")
            #expect(try await chappie(testbed.home, ["backup", file.path]).status == 0)
            let held = try Data(contentsOf: codex.appendingPathComponent("auth.json"))

            let restored = try await chappie(second, ["restore", file.path])
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(restored.stderr.contains("note: left out codex-home (\(codex.path)) is a setting of the machine"), "\(restored.stderr)")
            #expect(try await chappie(second, ["config", "get", "codex-home"]).stdout.contains(codex.path) == false)

            let refused = try await chappie(second, ["accounts", "switch", "side", "--codex-home", codex.path])
            #expect(refused.status == 78, "\(refused.stderr)")
            #expect(refused.stderr.contains("is the Codex home of another chappie data directory, \(testbed.home.path)"), "\(refused.stderr)")
            #expect(try Data(contentsOf: codex.appendingPathComponent("auth.json")) == held)
            // The owner itself switches there as before.
            #expect(try await chappie(testbed.home, ["accounts", "switch", "side"]).status == 0)
        }
    }

    @Test("chappie log hides polls unless --all, and filters by --account, --kind and --since")
    func auditLogFilters() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["work", "home"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            #expect(try await testbed.chappie(["usage", "poll", "--all"]).status == 0)
            #expect(try await testbed.chappie(["accounts", "switch", "home", "--no-codex-home"]).status == 0)

            let plain = try await testbed.chappie(["log"])
            #expect(plain.status == 0 && plain.stdout.contains("switched") && !plain.stdout.contains("usage_polled"), "\(plain.stdout)")
            #expect(try await testbed.chappie(["log", "--all"]).stdout.contains("usage_polled"))
            let polls = try await testbed.chappie(["log", "--kind", "usage_polled", "--account", "work", "--json"])
            let entries = JSONDocument(Data(polls.stdout.utf8)).array() as? [[String: Any]] ?? []
            #expect(!entries.isEmpty && entries.allSatisfy { $0["kind"] as? String == "usage_polled" && $0["account"] as? String == "work" })
            let switches = try await testbed.chappie(["log", "--kind", "switched,signed_in", "--since", "1h", "--json"])
            let kinds = Set((JSONDocument(Data(switches.stdout.utf8)).array() as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String })
            #expect(kinds == ["switched", "signed_in"], "\(switches.stdout)")
            let future = try await testbed.chappie(["log", "--since", "2099-01-01"])
            #expect(future.status == 0 && future.stdout == "No entries match.\n", "\(future.stdout)")
            #expect(try await testbed.chappie(["log", "--since", "10000-01-01"]).status == 2, "a year past 9999 is no time")
            let unknown = try await testbed.chappie(["log", "--kind", "polled"])
            #expect(unknown.status == 2 && unknown.stderr.contains("is not a kind of entry"), "\(unknown.stderr)")
        }
    }

    @Test("A switch under a running Codex warns: what Codex will do, not to sign in, and what to run instead")
    func switchUnderRunningCodexWarns() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let codex = testbed.home.appendingPathComponent("codex")
            for name in ["work", "side"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            #expect(try await testbed.chappie(["accounts", "switch", "work", "--codex-home", codex.path]).status == 0)
            // A process named codex running in that home, as `codex` is while a session is open.
            let bin = testbed.home.appendingPathComponent("bin")
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: URL(fileURLWithPath: "/bin/sleep"), to: bin.appendingPathComponent("codex"))
            // SIGKILL ends them: `sleep` keeps the test runner's blocked signals.
            let running = try ChildProcess(bin.appendingPathComponent("codex"), ["600"], environment: ["CODEX_HOME": codex.path])
            defer { kill(running.processIdentifier, SIGKILL) }
            // Another home's Codex is not this one's.
            let elsewhere = try ChildProcess(
                bin.appendingPathComponent("codex"), ["600"], environment: ["CODEX_HOME": testbed.home.appendingPathComponent("other").path])
            defer { kill(elsewhere.processIdentifier, SIGKILL) }

            let switched = try await testbed.chappie(["accounts", "switch", "side", "--codex-home", codex.path])
            #expect(switched.status == 0, "\(switched.stderr)")
            #expect(
                switched.stderr.contains(
                    "warning: Codex is running in \(codex.path) (pid \(running.processIdentifier)): it keeps work's tokens until it exits"),
                "\(switched.stderr)")
            #expect(switched.stderr.contains("Do not sign in: restart it to run as side") && switched.stderr.contains("exec --failover"))
            #expect(!switched.stderr.contains("\(elsewhere.processIdentifier)"))
            // Switching the same account in again changes no login under it: no warning.
            let again = try await testbed.chappie(["accounts", "switch", "side", "--codex-home", codex.path])
            #expect(again.status == 0 && !again.stderr.contains("Codex is running"), "\(again.stderr)")
            kill(running.processIdentifier, SIGKILL)
            await running.waitUntilExit()
            let after = try await testbed.chappie(["accounts", "switch", "work", "--codex-home", codex.path])
            #expect(after.status == 0 && !after.stderr.contains("Codex is running"), "\(after.stderr)")
        }
    }

    @Test(
        "accounts set --auto off keeps an account out of --best, guard --any and auto-switch; --priority orders them; auto-switch keeps to the workspace kind it leaves"
    )
    func automaticChoices() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            var ids: [String: String] = [:]
            for (name, plan) in [("mine", "plus"), ("accident", "plus"), ("seat", "team"), ("spare", "plus")] {
                _ = try await testbed.control("/_emulator/device/next", method: "POST", body: #"{"plan":"\#(plan)","email":"\#(name)@example.com"}"#)
                #expect(try await testbed.chappie(["accounts", "add", name]).status == 0)
                ids[name] = JSONDocument(Data(try await testbed.chappie(["accounts", "show", name, "--json"]).stdout.utf8)).string("chatgptAccountID")
            }
            func use(_ name: String, _ percent: Int) async throws {
                _ = try await testbed.control(
                    "/_emulator/accounts/\(ids[name] ?? "")/usage", method: "POST",
                    body: #"{"five_hour_used_percent":\#(percent),"weekly_used_percent":0}"#)
            }
            for (name, percent) in [("mine", 10), ("accident", 0), ("seat", 5), ("spare", 30)] { try await use(name, percent) }

            let off = try await testbed.chappie(["accounts", "set", "accident", "--auto", "off"])
            #expect(off.status == 0 && off.stdout.contains("accident: auto off"), "\(off.stdout)")
            let shown = JSONDocument(Data(try await testbed.chappie(["accounts", "show", "accident", "--json"]).stdout.utf8))
            #expect(shown.bool("autoSwitch") == false && shown.int("priority") == 0)
            let best = try await testbed.chappie(["accounts", "switch", "--best", "--no-codex-home"])
            #expect(best.status == 0 && best.stdout.contains("Best: seat has the most headroom"), "\(best.stdout)")
            #expect(try await testbed.chappie(["accounts", "set", "spare", "--priority", "5"]).stdout.contains("priority 5"))
            let preferred = try await testbed.chappie(["accounts", "switch", "--best", "--no-codex-home"])
            #expect(preferred.stdout.contains("Best: spare"), "\(preferred.stdout)")
            #expect(try await testbed.chappie(["accounts", "set", "spare", "--priority", "1001"]).status == 2)
            let negative = try await testbed.chappie(["accounts", "set", "accident", "--priority", "-5"])
            #expect(negative.status == 0 && negative.stdout.contains("priority -5"), "\(negative.stderr)")
            #expect(try await testbed.chappie(["accounts", "set", "spare", "--auto", "maybe"]).status == 2)
            #expect(try await testbed.chappie(["log", "--kind", "setting_changed"]).stdout.contains("auto = off"))

            // Only the account left out has room: no account will do for a job.
            for name in ["mine", "seat", "spare"] { try await use(name, 100) }
            let guarded = try await testbed.chappie(["guard", "--any", "--max-age", "0s"])
            #expect(guarded.status == 75 && guarded.stderr.hasPrefix("no account has 10 % headroom"), "\(guarded.stderr)")

            // The daemon's auto-switch, leaving a personal account: the work seat is never taken, the
            // account left out neither, though both have more room.
            #expect(try await testbed.chappie(["accounts", "switch", "mine", "--no-codex-home"]).status == 0)
            #expect(try await testbed.chappie(["accounts", "set", "spare", "--priority", "0"]).status == 0)
            for (name, percent) in [("mine", 100), ("accident", 0), ("seat", 0), ("spare", 40)] { try await use(name, percent) }
            let daemon = try testbed.startDaemon(["--poll-interval", "1s", "--auto-switch"])
            try await testbed.waitForSocket()
            var current = ""
            for _ in 0..<120 where current != "spare\n" {
                current = try await testbed.chappie(["accounts", "current"]).stdout
                if current != "spare\n" { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(current == "spare\n", "\(testbed.log("daemon.log").split(separator: "\n").filter { !$0.contains("usage polled") })")
            #expect(await testbed.stop(daemon) == 0)
        }
    }

    /// A stand-in for a running Codex: a program named `codex` (a copy of Python) with `CODEX_HOME`
    /// set, holding a rollout open for writing and writing the `token_count` event Codex writes after
    /// a turn, with the rate limits given.
    private func runCodex(in home: URL, usedPercent: Double, _ testbed: ChappieTestbed) throws -> ChildProcess {
        let bin = testbed.home.appendingPathComponent("fake-codex")
        if !FileManager.default.fileExists(atPath: bin.appendingPathComponent("codex").path) {
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                at: URL(fileURLWithPath: "/usr/bin/python3").resolvingSymlinksInPath(), to: bin.appendingPathComponent("codex"))
        }
        let script = """
            import json, os, sys, time, uuid, datetime
            now = datetime.datetime.now(datetime.timezone.utc)
            day = os.path.join(os.environ["CODEX_HOME"], "sessions", now.strftime("%Y/%m/%d"))
            os.makedirs(day, exist_ok=True)
            rollout = open(os.path.join(day, "rollout-%s-%s.jsonl" % (now.strftime("%Y-%m-%dT%H-%M-%S"), uuid.uuid4())), "a")
            stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            limits = {"limit_id": "codex", "primary": {"used_percent": float(sys.argv[1]), "window_minutes": 300, "resets_at": int(time.time()) + 3600},
                      "secondary": {"used_percent": 12.0, "window_minutes": 10080, "resets_at": int(time.time()) + 86400},
                      "plan_type": "plus", "rate_limit_reached_type": "rate_limit_reached" if float(sys.argv[1]) >= 100 else None}
            rollout.write(json.dumps({"timestamp": stamp, "type": "turn_context", "payload": {"model": "gpt-5"}}) + "\\n")
            rollout.write(json.dumps({"timestamp": stamp, "type": "event_msg", "payload": {"type": "token_count", "info": None, "rate_limits": limits}}) + "\\n")
            rollout.flush()
            time.sleep(600)
            """
        return try ChildProcess(bin.appendingPathComponent("codex"), ["-c", script, String(usedPercent)], environment: ["CODEX_HOME": home.path])
    }

    @Test(
        "The daemon reads the limit a running Codex hit from its rollout within seconds: the account's reading, the alert and the switch, without a poll; a reading usage poll stored alerts too"
    )
    func limitFromCodexRollout() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let codex = testbed.home.appendingPathComponent("codex")
            for name in ["work", "home"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            #expect(try await testbed.chappie(["accounts", "switch", "work", "--codex-home", codex.path]).status == 0)
            let webhook = testbed.emulator.issuer + "/_emulator/webhooks"
            // Polls every 10 minutes: only the first round polls, and sees work at its emulator's 0 %.
            let daemon = try testbed.startDaemon(["--auto-switch", "--alert-webhook", webhook, "--alert-at", "90"])
            try await testbed.waitForSocket()
            try await testbed.waitForLog("daemon.log", containing: "usage polled")
            let polls = try await testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") ?? 0

            let running = try runCodex(in: codex, usedPercent: 100, testbed)
            defer { kill(running.processIdentifier, SIGKILL) }
            try await testbed.waitForLog("daemon.log", containing: "usage read from Codex's session log")
            let threshold = try await testbed.waitForWebhook("threshold 90 for work") {
                $0["event"] as? String == "threshold" && $0["account"] as? String == "work"
            }
            #expect(threshold["usedPercent"] as? Double == 100)
            let switched = try await testbed.waitForWebhook("the switch") { $0["event"] as? String == "switched" }
            #expect(switched["from"] as? String == "work" && switched["account"] as? String == "home", "\(switched)")
            #expect(try await testbed.chappie(["accounts", "current"]).stdout == "home\n")
            let work = JSONDocument(Data(try await testbed.chappie(["accounts", "show", "work", "--json"]).stdout.utf8))
            #expect(work.string("name") == "work")
            let usage = JSONDocument(Data(try await testbed.chappie(["usage", "work", "--json", "--cached"]).stdout.utf8))
            #expect(usage.number(0, "usage", "fiveHour", "usedPercent") == 100, "\(usage.root ?? "")")
            #expect(try await testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") == polls, "no poll was needed")

            // A reading another command stored (home at 95 %) is alerted on too.
            let accounts = try await testbed.control("/_emulator/accounts")
            let home = try #require((0..<2).compactMap { accounts.string($0, "account_id") }.first { $0 != work.string("chatgptAccountID") })
            _ = try await testbed.control("/_emulator/accounts/\(home)/usage", method: "POST", body: #"{"five_hour_used_percent":95}"#)
            #expect(try await testbed.chappie(["usage", "poll", "home"]).status == 0)
            let polled = try await testbed.waitForWebhook("threshold 90 for home") {
                $0["event"] as? String == "threshold" && $0["account"] as? String == "home"
            }
            #expect(polled["usedPercent"] as? Double == 95)
            #expect(await testbed.stop(daemon) == 0)
        }
    }

    @Test("exec --failover says how old a reading it could not renew is, and warns before starting as an account at its limit")
    func failoverStartsWithAFreshReading() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["work", "home"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            let work = try #require(
                JSONDocument(Data(try await testbed.chappie(["accounts", "show", "work", "--json"]).stdout.utf8)).string("chatgptAccountID"))
            _ = try await testbed.control("/_emulator/accounts/\(work)/usage", method: "POST", body: #"{"five_hour_used_percent":30}"#)
            #expect(try await testbed.chappie(["usage", "poll", "work"]).status == 0)
            // That reading, 9 minutes old; then the emulator says 100 %.
            let database = testbed.home.appendingPathComponent("chappie.sqlite").path
            let aged = try await runProcess(
                URL(fileURLWithPath: "/usr/bin/python3"),
                [
                    "-c",
                    "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('UPDATE usage_samples SET observed_at = observed_at - 540'); c.commit()",
                    database,
                ])
            #expect(aged.status == 0, "\(aged.stderr)")
            _ = try await testbed.control("/_emulator/accounts/\(work)/usage", method: "POST", body: #"{"five_hour_used_percent":100}"#)

            // The poll fails: the old reading is shown with its age.
            _ = try await testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind":"status","status":503,"path":"/backend-api/wham/usage","count":10}"#)
            let stale = try await testbed.chappie(["exec", "--failover", "--resume", "true {session}", "--account", "work", "--", "true"])
            #expect(stale.status == 0, "\(stale.stderr)")
            #expect(stale.stderr.contains("running as work (5-hour 30 %, read 9 min ago (the poll now failed))"), "\(stale.stderr)")
            _ = try await testbed.control("/_emulator/faults", method: "DELETE")

            // Polled first: a real 100 % warns before the job starts.
            let full = try await testbed.chappie(["exec", "--failover", "--resume", "true {session}", "--account", "work", "--", "true"])
            #expect(full.status == 0, "\(full.stderr)")
            #expect(full.stderr.contains("warning: work is at its limit (5-hour 100 %; it resets in 4 h 5"), "\(full.stderr)")
            #expect(full.stderr.contains("running as work (5-hour 100 %)"), "\(full.stderr)")
        }
    }

    /// Runs chappie with `arguments` while the emulator holds requests to `path`, sends it SIGINT
    /// (Ctrl-C) once one is held, then lets the held requests go: its exit status and standard error.
    private func interrupted(_ arguments: [String], holding path: String, _ testbed: ChappieTestbed) async throws -> (status: Int32, stderr: String) {
        _ = try await testbed.control("/_emulator/faults", method: "POST", body: #"{"kind":"hold","path":"\#(path)","count":10}"#)
        let script = """
            import json, os, signal, subprocess, sys, time, urllib.request
            issuer = sys.argv[1]
            def held():
                return json.load(urllib.request.urlopen(issuer + "/_emulator/stats"))["held"]
            def reset():
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
            child = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=reset)
            for _ in range(1200):
                if held() > 0: break
                time.sleep(0.05)
            child.send_signal(signal.SIGINT)
            time.sleep(0.5)
            urllib.request.urlopen(urllib.request.Request(issuer + "/_emulator/release", method="POST"))
            error = child.stderr.read().decode()
            print(child.wait())
            sys.stdout.write(error)
            """
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/python3"),
            ["-c", script, testbed.emulator.issuer, try BuiltProducts.executable("chappie").path] + arguments + testbed.service,
            environment: ["HOME": testbed.userHome.path, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil], timeout: .seconds(120))
        _ = try await testbed.control("/_emulator/faults", method: "DELETE")
        let lines = result.stdout.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        return (Int32(lines.first ?? "") ?? -1, lines.count > 1 ? String(lines[1]) : "")
    }

    @Test(
        "Ctrl-C exits 130: an interrupted usage says it stopped, not that every poll failed; the notice of a refresh waiting shows only while one is sent"
    )
    func interrupts() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["work", "home"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            let usage = try await interrupted(["usage"], holding: "/backend-api/wham/usage", testbed)
            #expect(usage.status == 130, "\(usage.stderr)")
            #expect(usage.stderr.contains("Stopped before it finished."), "\(usage.stderr)")
            #expect(!usage.stderr.contains("poll failed") && !usage.stderr.contains("a refresh already sent"), "\(usage.stderr)")

            let guarded = try await interrupted(["guard", "--any", "--max-age", "0s"], holding: "/backend-api/wham/usage", testbed)
            #expect(guarded.status == 130 && guarded.stderr.contains("Stopped before it finished."), "\(guarded.stderr)")
            let best = try await interrupted(["accounts", "switch", "--best", "--no-codex-home"], holding: "/backend-api/wham/usage", testbed)
            #expect(best.status == 130, "\(best.stderr)")

            let refresh = try await interrupted(["refresh", "work"], holding: "/oauth/token", testbed)
            #expect(refresh.status == 130, "\(refresh.stderr)")
            #expect(refresh.stderr.contains("a refresh already sent waits for the issuer's answer"), "\(refresh.stderr)")
            // The answer that came after Ctrl-C was stored: the next refresh redeems the new token.
            #expect(try await testbed.chappie(["refresh", "work"]).status == 0)
            #expect(try await testbed.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)
        }
    }
}

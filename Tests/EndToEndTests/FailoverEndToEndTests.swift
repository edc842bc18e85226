import ChappieTestSupport
import Foundation
import Testing

@Suite("exec --failover and lease run --failover: a job that stops at its account's limit goes on as another account", .tags(.slow))
struct FailoverEndToEndTests {
    /// A job as Codex runs one, without Codex: it holds its session's rollout open in
    /// `$CODEX_HOME/sessions` (another job's session, not held, appears beside it meanwhile), takes
    /// turns at the emulator as its account until one is refused, and exits 1. Run as
    /// `job.sh resume ID`, it takes three turns (exiting 1 at a refused one) and notes which
    /// account resumed which session, and how. `$LOG` collects what happened; `$LEASES` (if set) gets
    /// `chappie lease list --json` as the resume saw it.
    static let job = #"""
        field() { grep -o "\"$1\" *: *\"[^\"]*\"" "$CODEX_HOME/auth.json" | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/'; }
        turn() {
          curl -s --noproxy '*' -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
            -H "Authorization: Bearer $(field access_token)" -H "ChatGPT-Account-Id: $(field account_id)" \
            -d '{"model":"gpt-5","stream":true,"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}]}' \
            "$BACKEND/codex/responses"
        }
        if [ "$1" = resume ]; then
          [ -n "$LEASES" ] && "$CHAPPIE" lease list --json --home "$CHAPPIE_HOME" > "$LEASES"
          for i in 1 2 3; do
            said=$(turn)
            [ "$said" = 200 ] || { echo "resumed $2 as $CHAPPIE_ACCOUNT: $said" >> "$LOG"; exit 1; }
          done
          echo "resumed $2 as $CHAPPIE_ACCOUNT: 200" >> "$LOG"
          exit 0
        fi
        day="$CODEX_HOME/sessions/2026/11/26"
        mkdir -p "$day"
        exec 3>> "$day/rollout-2026-11-26T10-00-00-$SESSION.jsonl"
        echo '{"type":"session_meta"}' > "$day/rollout-2026-11-26T10-00-01-$DECOY.jsonl"
        echo "started as $CHAPPIE_ACCOUNT" >> "$LOG"
        i=0
        while [ $i -lt 20 ]; do
          said=$(turn)
          echo "turn as $CHAPPIE_ACCOUNT: $said" >> "$LOG"
          [ "$said" = 200 ] || exit 1
          sleep 0.3; i=$((i+1))
        done
        """#

    /// Accounts a, b and c signed in, their emulator ids by name, and the job's files.
    private struct Bench {
        let testbed: ChappieTestbed
        let ids: [String: String]
        let files: URL
        let session = UUID().uuidString.lowercased()

        static func start(_ testbed: ChappieTestbed) async throws -> Bench {
            var ids: [String: String] = [:]
            for name in ["a", "b", "c"] {
                #expect(try await testbed.chappie(["accounts", "add", name]).status == 0)
                let shown = try await testbed.chappie(["accounts", "show", name, "--json"])
                let object = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
                ids[name] = try #require(object["chatgptAccountID"] as? String)
            }
            let files = try TestTokens.temporaryDirectory("chappie-failover")
            try Data(FailoverEndToEndTests.job.utf8).write(to: files.appendingPathComponent("job.sh"))
            return Bench(testbed: testbed, ids: ids, files: files)
        }

        func usage(_ name: String, _ body: String) async throws {
            _ = try await testbed.control("/_emulator/accounts/\(ids[name]!)/usage", method: "POST", body: body)
        }

        var environment: [String: String?] {
            [
                "BACKEND": testbed.emulator.backend, "LOG": files.appendingPathComponent("log").path, "SESSION": session,
                "DECOY": UUID().uuidString.lowercased(), "CHAPPIE": try? BuiltProducts.executable("chappie").path,
                "CHAPPIE_HOME": testbed.home.path,
            ]
        }

        var log: String { (try? String(contentsOf: files.appendingPathComponent("log"), encoding: .utf8)) ?? "" }
        var job: String { files.appendingPathComponent("job.sh").path }
        var resume: String { "sh \(job) resume {session}" }
    }

    @Test(
        "exec --failover: a hits its limit mid-job; the job's own session (not the other one beside it) is resumed as b, the one with most headroom")
    func execFailsOver() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let bench = try await Bench.start(testbed)
            defer { try? FileManager.default.removeItem(at: bench.files) }
            try await bench.usage("a", #"{"five_hour_used_percent":5,"limit_after_turns":2}"#)
            try await bench.usage("b", #"{"five_hour_used_percent":30,"weekly_used_percent":10}"#)
            try await bench.usage("c", #"{"five_hour_used_percent":60,"weekly_used_percent":10}"#)
            // The webhook by the name localhost, behind a dead proxy that only 127.0.0.1 bypasses: an
            // alert to loopback never goes through a proxy.
            let webhook = testbed.emulator.issuer.replacingOccurrences(of: "127.0.0.1", with: "localhost") + "/_emulator/webhooks"
            // Beside it, one that never answers: retried while the resumed job runs, stopped 30 s after it ends.
            #expect(try await testbed.chappie(["config", "set", "alert-webhook", webhook + " http://127.0.0.1:9/dead"]).status == 0)

            var environment = bench.environment
            environment["http_proxy"] = "http://127.0.0.1:9"
            environment["no_proxy"] = "127.0.0.1"
            let run = try await testbed.chappie(
                ["exec", "--failover", "--resume", bench.resume, "a", "--", "sh", bench.job], environment: environment)
            #expect(run.status == 0, "\(run.stderr)")
            let lines = run.stderr.split(separator: "\n").map(String.init)
            #expect(lines.first == "chappie: running as a (5-hour 5 %)", "\(run.stderr)")
            #expect(
                lines.contains("chappie: a reached its limit (5-hour 100 %); resuming session \(bench.session) as b (failover 1 of 3)"),
                "\(run.stderr)")
            #expect(lines.contains("chappie: running as b (5-hour 30 %)"), "\(run.stderr)")
            #expect(
                lines.contains("chappie: warning: 1 failover alert was still being delivered when the job ended, and stopped"), "\(run.stderr)")
            #expect(!run.stderr.contains("/dead"), "a webhook's path is redacted: \(run.stderr)")
            #expect(
                bench.log == "started as a\nturn as a: 200\nturn as a: 200\nturn as a: 429\nresumed \(bench.session) as b: 200\n", "\(bench.log)")
            let log = try await testbed.chappie(["log", "--json"])
            #expect(log.stdout.contains("from a (5-hour 100 %) to b: session \(bench.session), failover 1 of at most 3"), "\(log.stdout)")
            // Nothing of the job's arguments or tokens in what chappie printed.
            #expect(!run.stderr.contains("eyJ"))
            // The failover alert, to this machine's webhook.
            let bodies = try await testbed.control("/_emulator/webhooks").root as? [String] ?? []
            let alert = try #require(bodies.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
            #expect(bodies.count == 1)
            #expect(alert["event"] as? String == "failover" && alert["from"] as? String == "a" && alert["account"] as? String == "b", "\(alert)")
            #expect(alert["usedPercent"] as? Double == 100 && alert["window"] as? String == "5h")
        }
    }

    @Test("exec --failover stops where it must: the account not at its limit, --max-failovers reached, no other account with room")
    func execStops() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let bench = try await Bench.start(testbed)
            defer { try? FileManager.default.removeItem(at: bench.files) }
            // A job failing for its own reasons is not failed over: its status is chappie's.
            let own = try await testbed.chappie(["exec", "--failover", "--resume", bench.resume, "a", "--", "sh", "-c", "exit 4"])
            #expect(own.status == 4)
            #expect(own.stderr.contains("chappie: the job exited 4 with a not at its limit; no failover"), "\(own.stderr)")
            let missing = try await testbed.chappie(["exec", "--failover", "--resume", bench.resume, "a", "--", "chappie-no-such-program"])
            #expect(missing.status == 127)
            #expect(missing.stderr.contains("chappie: cannot run chappie-no-such-program: No such file or directory"), "\(missing.stderr)")

            // a stops after a turn and b, taking over, after another; c is full: one failover only.
            try await bench.usage("a", #"{"limit_after_turns":1}"#)
            try await bench.usage("b", #"{"five_hour_used_percent":10,"limit_after_turns":1}"#)
            try await bench.usage("c", #"{"five_hour_used_percent":100}"#)
            let chain = try await testbed.chappie(
                ["exec", "--failover", "--max-failovers", "1", "--resume", bench.resume, "--account", "a", "--", "sh", bench.job],
                environment: bench.environment)
            #expect(chain.status == 1, "\(chain.stderr)")
            #expect(chain.stderr.contains("resuming session \(bench.session) as b (failover 1 of 1)"), "\(chain.stderr)")
            #expect(
                chain.stderr.contains("chappie: b reached its limit (5-hour 100 %); --max-failovers 1 reached, so the job stops here"),
                "\(chain.stderr)")

            // With every other account full, the job stops with its own status and says why.
            try await bench.usage("a", #"{"five_hour_used_percent":0,"limit_after_turns":1}"#)
            let stuck = try await testbed.chappie(
                ["exec", "--failover", "--resume", bench.resume, "a", "--", "sh", bench.job], environment: bench.environment)
            #expect(stuck.status == 1)
            #expect(stuck.stderr.contains("chappie: a reached its limit (5-hour 100 %); no other account can take the job over"), "\(stuck.stderr)")
        }
    }

    @Test("SIGTERM reaches the running job and no failover follows; a reserve is not the limit")
    func signalsAndReserve() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let bench = try await Bench.start(testbed)
            defer { try? FileManager.default.removeItem(at: bench.files) }
            // a at its limit; the job waits (bounded) for SIGTERM, then fails as a job at its limit would.
            try await bench.usage("a", #"{"five_hour_used_percent":100}"#)
            let (status, said) = try await Self.stopJob(testbed, bench, with: SIGTERM)
            #expect(status == 1, "\(said)")
            #expect(bench.log == "got TERM\n")
            #expect(said.contains("chappie: the job exited 1 after chappie was asked to stop (signal 15); no failover"), "\(said)")

            // b with a reserve of 50 at 60 %: chappie's reserve, not the service's limit.
            #expect(try await testbed.chappie(["accounts", "set", "b", "--reserve", "50"]).status == 0)
            try await bench.usage("b", #"{"five_hour_used_percent":60}"#)
            let reserved = try await testbed.chappie(["exec", "--failover", "--resume", bench.resume, "b", "--", "sh", "-c", "exit 1"])
            #expect(reserved.status == 1)
            #expect(reserved.stderr.contains("the job exited 1 with b not at its limit; no failover"), "\(reserved.stderr)")
        }
    }

    @Test(
        "Ctrl-C (SIGINT to the foreground group, as a terminal sends it) and SIGHUP to chappie reach the running job too; no failover follows",
        arguments: [SIGINT, SIGHUP])
    func otherSignals(_ signal: Int32) async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let bench = try await Bench.start(testbed)
            defer { try? FileManager.default.removeItem(at: bench.files) }
            try await bench.usage("a", #"{"five_hour_used_percent":100}"#)
            let (status, said) = try await Self.stopJob(testbed, bench, with: signal)
            #expect(status == 1, "\(said)")
            #expect(bench.log == (signal == SIGINT ? "got INT\n" : "got HUP\n"), "\(bench.log)")
            // The job and chappie get Ctrl-C at once: chappie may take it before the job ends or after
            // it has begun to read the account's usage. Either way it says why and fails nothing over.
            #expect(said.contains("chappie was asked to stop (signal \(signal))"), "\(said)")
            #expect(!said.contains("resuming session") && !said.contains("running as b"), "\(said)")
        }
    }

    /// Runs `exec --failover` as a on a job that waits (bounded) for a signal and logs which it got,
    /// sends `signal` once the job runs, and returns chappie's exit status and stderr. chappie is
    /// started as a terminal's shell starts a foreground job: in a process group of its own, SIGINT
    /// and SIGHUP not ignored (the test runner ignores SIGINT, which a child would inherit and
    /// keep). SIGINT goes to the whole group, as Ctrl-C does (chappie passes it to no one); other
    /// signals to chappie alone, which relays them.
    private static func stopJob(_ testbed: ChappieTestbed, _ bench: Bench, with signal: Int32) async throws -> (status: Int32, said: String) {
        let started = bench.files.appendingPathComponent("started")
        let log = bench.files.appendingPathComponent("log").path
        let job =
            "trap 'echo got INT >> \(log); exit 1' INT; trap 'echo got HUP >> \(log); exit 1' HUP; trap 'echo got TERM >> \(log); exit 1' TERM; "
            + "touch \(started.path); i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done"
        let stderr = bench.files.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
        let handle = try FileHandle(forWritingTo: stderr)
        let asFromAShell = """
            import os, signal, sys
            os.setpgid(0, 0)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            os.execv(sys.argv[1], sys.argv[1:])
            """
        let chappie = try ChildProcess(
            URL(fileURLWithPath: "/usr/bin/python3"),
            ["-c", asFromAShell, try BuiltProducts.executable("chappie").path, "exec", "--failover", "--resume", bench.resume, "a"]
                + testbed.service + ["--", "sh", "-c", job],
            environment: ["HOME": testbed.userHome.path], directory: bench.files, stderr: .descriptor(handle.fileDescriptor))
        try handle.close()
        for _ in 0..<600 where !FileManager.default.fileExists(atPath: started.path) { try await Task.sleep(for: .milliseconds(50)) }
        // Only to a chappie still running (a group id is reused once its leader is gone).
        if chappie.isRunning { kill(signal == SIGINT ? -chappie.processIdentifier : chappie.processIdentifier, signal) }
        await chappie.waitUntilExit()
        return (await chappie.terminationStatus, try String(contentsOf: stderr, encoding: .utf8))
    }

    @Test("--failover refuses, before anything runs, what it could not resume")
    func refusals() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "a"]).status == 0)
            for (arguments, said) in [
                (["exec", "--failover", "a", "--", "make", "test"], "--failover resumes codex exec jobs by itself; for make, give --resume"),
                (["exec", "--failover", "--resume", "sh job.sh", "a", "--", "make"], "--resume must say where the session id goes with {session}"),
                (
                    ["exec", "--failover", "--resume", "sh 'job.sh {session}", "a", "--", "make"],
                    "--resume is not a command line: a ' quote is never closed"
                ),
                (["exec", "--failover", "a", "--", "codex", "exec", "--ephemeral", "hi"], "an --ephemeral codex exec writes no session"),
                (["exec", "--resume", "x {session}", "a", "--", "codex"], "--resume goes with --failover"),
                (["lease", "--failover", "--codex-home", "private", "--", "codex", "exec", "hi"], "leave out --codex-home"),
            ] {
                let refused = try await testbed.chappie(arguments)
                #expect(refused.status == 2, "\(arguments): \(refused.stderr)")
                #expect(refused.stderr.contains(said), "\(arguments): \(refused.stderr)")
            }
            let log = try await testbed.chappie(["log", "--json"])
            #expect(!log.stdout.contains("\"failover\""))
        }
    }

    @Test("lease run --failover gives a's lease back before b's is taken, and resumes the job's session under it")
    func leaseFailsOver() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let bench = try await Bench.start(testbed)
            defer { try? FileManager.default.removeItem(at: bench.files) }
            try await bench.usage("a", #"{"five_hour_used_percent":1,"limit_after_turns":1}"#)
            try await bench.usage("b", #"{"five_hour_used_percent":20}"#)
            try await bench.usage("c", #"{"five_hour_used_percent":70}"#)
            let leases = bench.files.appendingPathComponent("leases.json")
            var environment = bench.environment
            environment["LEASES"] = leases.path
            let run = try await testbed.chappie(
                ["lease", "run", "--account", "a", "--failover", "--resume", bench.resume, "--", "sh", bench.job], environment: environment)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("chappie: a reached its limit (5-hour 100 %); resuming session \(bench.session) as b"), "\(run.stderr)")
            #expect(bench.log.hasSuffix("resumed \(bench.session) as b: 200\n"), "\(bench.log)")
            let held = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: leases)) as? [[String: Any]])
            #expect(held.map { $0["account"] as? String } == ["b"], "only b's lease while the resume ran: \(held)")
            #expect((try await testbed.chappie(["lease", "list"])).stdout.contains("No leases."))
        }
    }
}

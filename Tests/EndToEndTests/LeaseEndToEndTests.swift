import ChappieTestSupport
import Foundation
import Testing

@Suite("Leases: accounts handed to jobs by headroom and free slots, on the local store and the team pool", .tags(.slow))
struct LeaseEndToEndTests {
    private static let emulator = ["--auto-approve", "--auto-approve-delay", "0.1", "--device-code-interval", "1"]

    /// Where the jobs run: the local SQLite store, or a team pool that two machines share.
    enum Backend: String, CaseIterable, Sendable {
        case sqlite, postgres
    }

    /// A testbed and, for the pool, its address; `chappie` as machine 1 or 2 (one machine on SQLite).
    private struct Bench: Sendable {
        let testbed: ChappieTestbed
        let url: String?

        static func start(_ backend: Backend) async throws -> Bench {
            let testbed = try await ChappieTestbed.start(emulatorArguments: LeaseEndToEndTests.emulator)
            guard backend == .postgres else { return Bench(testbed: testbed, url: nil) }
            let (_, url) = try await SharedPostgres.database()
            let bench = Bench(testbed: testbed, url: url)
            // Machine 1 opens the pool (making its key), then machine 2 gets a copy of the key.
            #expect(try await bench.chappie(1, ["accounts", "list"]).status == 0)
            let second = testbed.home.appendingPathComponent("m2")
            try FileManager.default.createDirectory(at: second, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.copyItem(at: testbed.home.appendingPathComponent("chappie.key"), to: second.appendingPathComponent("chappie.key"))
            return bench
        }

        func chappie(_ machine: Int, _ arguments: [String], timeout: Duration = .seconds(120)) async throws -> ProcessResult {
            guard let url else { return try await testbed.chappie(arguments, timeout: timeout) }
            let home = machine == 1 ? testbed.home : testbed.home.appendingPathComponent("m2")
            let runner = ChappieRunner(home: home, emulator: testbed.emulator, userHome: testbed.userHome, machine: "m\(machine)", storeURL: url)
            return try await runner(arguments, timeout: timeout)
        }
    }

    @Test("6 jobs on 3 accounts with 2 slots each run at once, spread 2/2/2; a 7th waits, then gives up with 75", arguments: Backend.allCases)
    func spread(_ backend: Backend) async throws {
        let bench = try await Bench.start(backend)
        try await whileRunning(bench.testbed) {
            for name in ["a", "b", "c"] {
                #expect(try await bench.chappie(1, ["accounts", "add", name]).status == 0)
                #expect(try await bench.chappie(1, ["accounts", "set", name, "--max-leases", "2"]).status == 0)
            }
            let marks = try TestTokens.temporaryDirectory("chappie-lease-marks")
            defer { try? FileManager.default.removeItem(at: marks) }
            // Each job notes its account, then holds its lease until the test lets go (at most 60 s): the
            // six can only all be running if the slots were spread.
            let letGo = marks.path + ".go"
            defer { unlink(letGo) }
            let job = "echo $CHAPPIE_ACCOUNT > \(marks.path)/$$; i=0; while [ ! -e \(letGo) ] && [ $i -lt 300 ]; do sleep 0.2; i=$((i+1)); done"
            let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
                for index in 0..<6 {
                    group.addTask { try await bench.chappie(index % 2 + 1, ["lease", "--ttl", "1m", "--wait", "1m", "--", "sh", "-c", job]) }
                }
                // A 7th, once all six hold theirs: no slot is free.
                group.addTask {
                    while ((try? FileManager.default.contentsOfDirectory(atPath: marks.path).count) ?? 0) < 6 {
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    let seventh = try await bench.chappie(2, ["lease", "--wait", "2s", "--", "true"])
                    _ = FileManager.default.createFile(atPath: letGo, contents: Data())
                    return seventh
                }
                return try await group.reduce(into: [ProcessResult]()) { $0.append($1) }
            }
            let refused = results.filter { $0.status == 75 }
            #expect(refused.count == 1, "\(results.map { "\($0.status) \($0.stderr)" })")
            #expect(refused.first?.stderr.contains("no account had a free lease slot") == true)
            #expect(results.filter { $0.status == 0 }.count == 6, "\(results.map { "\($0.status) \($0.stderr)" })")
            var spread: [String: Int] = [:]
            for file in try FileManager.default.contentsOfDirectory(atPath: marks.path) {
                let account = try String(contentsOf: marks.appendingPathComponent(file), encoding: .utf8).trimmingCharacters(
                    in: .whitespacesAndNewlines)
                spread[account, default: 0] += 1
            }
            #expect(spread == ["a": 2, "b": 2, "c": 2])
            // Every lease was given back.
            #expect(try await bench.chappie(1, ["lease", "list"]).stdout.contains("No leases."))
        }
    }

    @Test("A holder that never gives its lease back: the slot is taken over once its TTL has passed", arguments: Backend.allCases)
    func takeover(_ backend: Backend) async throws {
        let bench = try await Bench.start(backend)
        try await whileRunning(bench.testbed) {
            #expect(try await bench.chappie(1, ["accounts", "add", "solo"]).status == 0)
            // `lease acquire` ends without releasing: the holder is gone, the lease stays until it expires.
            // The lease is made after `started`, so it expires 30 s after it at the earliest: long
            // enough that the next command finds it held on a loaded machine.
            let clock = ContinuousClock()
            let started = clock.now
            let first = try await bench.chappie(1, ["lease", "acquire", "--ttl", "30s", "--json"])
            #expect(first.status == 0, "\(first.stderr)")
            let lease = JSONDocument(Data(first.stdout.utf8))
            #expect(lease.string("account") == "solo")
            let busy = try await bench.chappie(2, ["lease", "acquire", "--wait", "1s"])
            #expect(busy.status == 75)
            let taken = try await bench.chappie(2, ["lease", "acquire", "--wait", "90s", "--json"])
            #expect(taken.status == 0, "\(taken.stderr)")
            #expect(JSONDocument(Data(taken.stdout.utf8)).string("id") != lease.string("id"))
            #expect(clock.now - started >= .seconds(30), "taken over before the first lease expired")
            let log = try await bench.chappie(1, ["log", "--json"])
            #expect(log.stdout.contains("lease_expired"))
            // Renewing the lost lease says it is gone; releasing the new one frees the slot.
            let renew = try await bench.chappie(1, ["lease", "renew", try #require(lease.string("id"))])
            #expect(renew.status == 1)
            #expect(renew.stderr.contains("is gone"))
            let newID = try #require(JSONDocument(Data(taken.stdout.utf8)).string("id"))
            #expect(try await bench.chappie(2, ["lease", "release", newID]).status == 0)
            #expect(try await bench.chappie(1, ["lease", "acquire", "--wait", "1s"]).status == 0)
        }
    }

    @Test(
        "A lease hands out the Codex home the account owns; chappie exec's private one takes every slot of the account", arguments: Backend.allCases)
    func wholeAccount(_ backend: Backend) async throws {
        let bench = try await Bench.start(backend)
        try await whileRunning(bench.testbed) {
            #expect(try await bench.chappie(1, ["accounts", "add", "shared"]).status == 0)
            #expect(try await bench.chappie(1, ["accounts", "set", "shared", "--max-leases", "3"]).status == 0)
            // Without a private home, slot leases: two at once.
            #expect(try await bench.chappie(1, ["lease", "acquire", "--ttl", "1m"]).status == 0)
            let second = JSONDocument(Data(try await bench.chappie(1, ["lease", "acquire", "--ttl", "1m", "--json"]).stdout.utf8))
            #expect(second.bool("wholeAccount") == false)
            #expect(second.string("codexHome") == nil)
            for lease in JSONDocument(Data(try await bench.chappie(1, ["lease", "list", "--json"]).stdout.utf8)).array() ?? [] {
                let id = try #require((lease as? [String: Any])?["id"] as? String)
                #expect(try await bench.chappie(1, ["lease", "release", id]).status == 0)
            }
            // chappie exec makes the account's private Codex home; from then on a lease hands it out and takes the account.
            #expect(try await bench.chappie(1, ["exec", "--account", "shared", "--", "true"]).status == 0)
            let run = try await bench.chappie(1, ["lease", "--", "sh", "-c", "echo $CODEX_HOME"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("codex-homes/"))
            let whole = JSONDocument(Data(try await bench.chappie(1, ["lease", "acquire", "--ttl", "1m", "--json"]).stdout.utf8))
            #expect(whole.bool("wholeAccount") == true)
            #expect(whole.string("codexHome")?.contains("codex-homes/") == true)
            let more = try await bench.chappie(1, ["lease", "acquire", "--wait", "1s"])
            #expect(more.status == 75, "\(more.stderr)")

            // An account that owns the Codex home switch wrote: the job runs as it there (CODEX_HOME),
            // and other jobs may share the account's slots.
            #expect(try await bench.chappie(1, ["accounts", "add", "owner"]).status == 0)
            let codexHome = bench.testbed.home.appendingPathComponent("codex-owner")
            #expect(try await bench.chappie(1, ["accounts", "switch", "owner", "--codex-home", codexHome.path]).status == 0)
            #expect(try await bench.chappie(1, ["accounts", "set", "owner", "--max-leases", "2"]).status == 0)
            let owned = try await bench.chappie(1, ["lease", "--account", "owner", "--", "sh", "-c", "echo $CODEX_HOME"])
            #expect(owned.status == 0 && owned.stdout == codexHome.path + "\n", "\(owned.stderr)")
            let shared = JSONDocument(
                Data(try await bench.chappie(1, ["lease", "acquire", "--account", "owner", "--ttl", "1m", "--json"]).stdout.utf8))
            #expect(shared.bool("wholeAccount") == false)
            #expect(shared.string("codexHome") == codexHome.path)
            #expect(try await bench.chappie(1, ["lease", "acquire", "--account", "owner", "--ttl", "1m"]).status == 0)
            // A job that asks for a Codex home of its own gets one made for it, and takes every slot.
            #expect(try await bench.chappie(1, ["accounts", "add", "alone"]).status == 0)
            #expect(try await bench.chappie(1, ["accounts", "set", "alone", "--max-leases", "3"]).status == 0)
            let own = JSONDocument(
                Data(
                    try await bench.chappie(1, ["lease", "acquire", "--account", "alone", "--codex-home", "private", "--ttl", "1m", "--json"]).stdout
                        .utf8
                ))
            #expect(own.bool("wholeAccount") == true)
            #expect(own.string("codexHome")?.contains("codex-homes/") == true, "\(own.root.map { "\($0)" } ?? "")")
            #expect(try await bench.chappie(1, ["lease", "acquire", "--account", "alone", "--wait", "1s"]).status == 75)
            #expect(try await bench.chappie(1, ["lease", "acquire", "--codex-home", "shared"]).status == 2)
            // While a job runs in that home, the account does not leave it (the in-use lock, as exec's).
            if backend == .sqlite {
                #expect(try await bench.chappie(1, ["accounts", "set", "owner", "--max-leases", "3"]).status == 0)
                let elsewhere = bench.testbed.home.appendingPathComponent("codex-elsewhere")
                let inside: [String: String?] = [
                    "CHAPPIE": try BuiltProducts.executable("chappie").path, "SERVICE": bench.testbed.service.joined(separator: " "),
                    "OTHER": elsewhere.path,
                ]
                let attempt = try await bench.testbed.chappie(
                    [
                        "lease", "run", "--account", "owner", "--wait", "1m", "--", "sh", "-c",
                        #""$CHAPPIE" accounts switch owner --codex-home "$OTHER" $SERVICE; echo "switch=$?""#,
                    ],
                    environment: inside)
                #expect(attempt.stdout.contains("switch=1") && attempt.stderr.contains("owner is in use"), "\(attempt.stdout) \(attempt.stderr)")
            }
        }
    }

    @Test(
        "lease run passes SIGTERM and SIGHUP on to its command, leaves a Ctrl-C sent to chappie alone, returns the command's status and gives the lease back"
    )
    func runSignals() async throws {
        let testbed = try await ChappieTestbed.start(emulatorArguments: Self.emulator)
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "solo"]).status == 0)
            for (signal, status) in [(SIGTERM, Int32(7)), (SIGHUP, Int32(8))] {
                let ready = testbed.home.appendingPathComponent("ready-\(signal)"), got = testbed.home.appendingPathComponent("got-\(signal)")
                // The command says when it is running, then waits; the signal it is sent ends it with `status`.
                let script = "trap 'echo got > \(got.path); exit \(status)' TERM HUP; echo ready > \(ready.path); while :; do sleep 0.05; done"
                let job = try ChildProcess(try BuiltProducts.executable("chappie"), ["lease", "run"] + testbed.service + ["--", "sh", "-c", script])
                // However loaded the machine: a signal sent before chappie relays them would end it.
                var waited = 0
                while !FileManager.default.fileExists(atPath: ready.path), job.isRunning, waited < 2400 {
                    try await Task.sleep(for: .milliseconds(50))
                    waited += 1
                }
                try #require(FileManager.default.fileExists(atPath: ready.path), "the command did not start")
                // A Ctrl-C sent to chappie alone (not to the terminal's process group) ends neither.
                kill(job.processIdentifier, SIGINT)
                try await Task.sleep(for: .milliseconds(300))
                #expect(job.isRunning && !FileManager.default.fileExists(atPath: got.path))
                kill(job.processIdentifier, signal)
                for _ in 0..<600 where job.isRunning { try await Task.sleep(for: .milliseconds(50)) }
                if job.isRunning { kill(job.processIdentifier, SIGKILL) }
                await job.waitUntilExit()
                #expect(await job.terminationStatus == status, "signal \(signal)")
                #expect(FileManager.default.fileExists(atPath: got.path), "the command was told (signal \(signal))")
                #expect(try await testbed.chappie(["lease", "list"]).stdout.contains("No leases."))
            }
        }
    }

    @Test("Bad lease and pool input: a clear error, the right exit code, and nothing changed")
    func badInput() async throws {
        let bench = try await Bench.start(.sqlite)
        try await whileRunning(bench.testbed) {
            // No account at all: at once, 77, and what to do (no ten-minute wait for a slot).
            let none = try await bench.chappie(1, ["lease", "run", "--", "true"])
            #expect(none.status == 77 && none.stderr.contains("no account to lease: sign one in with chappie accounts add NAME"), "\(none.stderr)")
            #expect(try await bench.chappie(1, ["accounts", "add", "only"]).status == 0)
            let cases: [([String], Int32, String)] = [
                (["lease", "renew", "not-a-lease"], 2, "is not a lease id"),
                (["lease", "release", "12345"], 2, "is not a lease id"),
                (["lease", "--ttl", "1s", "--", "true"], 2, "--ttl must be at least 10s"),
                (["lease", "--ttl", "soon", "--", "true"], 2, "is not a duration"),
                (["lease", "--account", "only", "--best", "--", "true"], 2, "not both"),
                (["lease"], 2, "name the command to run"),
                (["lease", "--account", "nobody", "--", "true"], 1, "no account named nobody"),
                (["accounts", "set", "only"], 2, "--reserve PERCENT, --max-leases COUNT, --auto on|off or --priority N"),
                (["accounts", "set", "only", "--max-leases", "0"], 1, "from 1 to 1000"),
                (["accounts", "set", "only", "--max-leases", "many"], 2, "many"),
                (["pool", "migrate"], 2, "--from-sqlite"),
                (["pool", "migrate", "--from-sqlite"], 78, "no team pool is selected"),
            ]
            for (arguments, status, words) in cases {
                let result = try await bench.chappie(1, arguments)
                #expect(result.status == status, "\(arguments): \(result.status) \(result.stderr)")
                #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
            }
            // Nothing changed: the account keeps one slot, and no lease was taken.
            let account = JSONDocument(Data(try await bench.chappie(1, ["accounts", "list", "--json"]).stdout.utf8))
            #expect(account.int(0, "maxLeases") == 1)
            #expect(try await bench.chappie(1, ["lease", "list"]).stdout.contains("No leases."))
            // A damaged pool-instance file names itself and is left alone.
            let (_, url) = try await SharedPostgres.database()
            let instance = bench.testbed.home.appendingPathComponent("pool-instance")
            try "not a uuid\n".write(to: instance, atomically: true, encoding: .utf8)
            let damaged = try await bench.testbed.chappie(["--store", url, "accounts", "list"])
            #expect(damaged.status == 78, "\(damaged.stderr)")
            #expect(damaged.stderr.contains("pool-instance does not hold a UUID"), "\(damaged.stderr)")
            #expect(try String(contentsOf: instance, encoding: .utf8) == "not a uuid\n")
        }
    }
}

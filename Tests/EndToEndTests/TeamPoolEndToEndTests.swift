import ChappieTestSupport
import Foundation
import Synchronization
import Testing

/// Simulated machines sharing one team pool: each a data directory and a `--machine` name of its
/// own, the same PostgreSQL database and the same emulator, running the real `chappie`.
private struct PoolFleet: TestFixture {
    let testbed: ChappieTestbed
    let url: String
    let homes: [URL]

    /// `count` machines (`m1`…); the first makes the pool's key, the others get a copy of it unless
    /// `sharingKey` is false.
    static func start(machines count: Int, url: String, emulatorArguments: [String], sharingKey: Bool = true) async throws -> PoolFleet {
        let testbed = try await ChappieTestbed.start(emulatorArguments: emulatorArguments)
        var homes: [URL] = []
        for index in 1...count {
            let home = testbed.home.appendingPathComponent("m\(index)")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            homes.append(home)
        }
        let fleet = PoolFleet(testbed: testbed, url: url, homes: homes)
        let first = try await fleet.chappie(1, ["accounts", "list"])
        guard first.status == 0 else { throw EmulatorHarnessError(message: "the first machine did not open the pool: \(first.stderr)") }
        if sharingKey {
            for home in homes.dropFirst() {
                try FileManager.default.copyItem(at: homes[0].appendingPathComponent("chappie.key"), to: home.appendingPathComponent("chappie.key"))
            }
        }
        return fleet
    }

    /// Runs `chappie` as machine `index` (1-based).
    func chappie(_ index: Int, _ arguments: [String], environment: [String: String?] = [:]) async throws -> ProcessResult {
        let runner = ChappieRunner(
            home: homes[index - 1], emulator: testbed.emulator, machine: "m\(index)", storeURL: url, timeout: .seconds(120))
        return try await runner(arguments, environment: environment)
    }

    func stop() async {
        await testbed.stop()
    }
}

@Suite("The team pool: several machines share one PostgreSQL store", .tags(.slow))
struct TeamPoolEndToEndTests {
    private static let emulator = ["--auto-approve", "--auto-approve-delay", "0.2", "--device-code-interval", "1"]

    @Test(
        "Two machines share accounts: one signs in, the other (with the key) gets tokens; without the key it is refused; the password is never printed"
    )
    func sharedAccounts() async throws {
        let (server, plain) = try await SharedPostgres.database()
        // A password in the address (the test server trusts the socket, so it is not needed): it must never be shown.
        let url = plain.replacingOccurrences(of: "postgres://chappie@", with: "postgres://chappie:pool-password-9f2c@")
        let fleet = try await PoolFleet.start(machines: 3, url: url, emulatorArguments: Self.emulator + ["--access-token-ttl", "3"])
        try await whileRunning(fleet) {
            // Machine 3 never gets the key.
            try FileManager.default.removeItem(at: fleet.homes[2].appendingPathComponent("chappie.key"))
            var outputs: [ProcessResult] = []

            let added = try await fleet.chappie(1, ["accounts", "add", "work"])
            #expect(added.status == 0, "\(added.stderr)")
            outputs.append(added)
            outputs.append(try await fleet.chappie(1, ["accounts", "add", "home"]))
            let listed = try await fleet.chappie(2, ["accounts", "list", "--json"])
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(JSONDocument(Data(listed.stdout.utf8)).array()?.count == 2)
            outputs.append(listed)

            // Machine 2 refreshes machine 1's account: one rotation, seen by both.
            try await Task.sleep(for: .seconds(3))
            let token = try await fleet.chappie(2, ["token", "work"])
            #expect(token.status == 0, "\(token.stderr)")
            #expect(token.stdout.split(separator: ".").count == 3)
            let again = try await fleet.chappie(1, ["token", "work", "--margin", "0s"])
            #expect(again.status == 0, "\(again.stderr)")
            outputs += [token, again]

            // Without the pool's key: refused, naming the key, and nothing written.
            let keyless = try await fleet.chappie(3, ["accounts", "list"])
            #expect(keyless.status == 78)
            #expect(keyless.stderr.contains("sealed with key"), "\(keyless.stderr)")
            #expect(!FileManager.default.fileExists(atPath: fleet.homes[2].appendingPathComponent("chappie.key").path))
            outputs.append(keyless)

            // The audit log names the machines.
            let log = try await fleet.chappie(2, ["log"])
            #expect(log.stdout.contains("on m1") && log.stdout.contains("on m2"), "\(log.stdout)")
            outputs.append(log)

            for output in outputs {
                #expect(!output.stdout.contains("pool-password-9f2c") && !output.stderr.contains("pool-password-9f2c"))
            }
            // The database holds sealed blobs only: no token appears in it.
            let dump = try await server.psql("SELECT encode(ciphertext, 'escape') FROM sealed_credentials", in: plain)
            #expect(dump.status == 0)
            #expect(!dump.stdout.contains(token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
            let stats = try await fleet.testbed.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0)
        }
    }

    @Test(
        "A Codex home is owned fleet-wide: switching an account whose tokens are in another machine's Codex home is refused until that home moves on")
    func codexHomeAcrossMachines() async throws {
        let (_, url) = try await SharedPostgres.database()
        let fleet = try await PoolFleet.start(machines: 2, url: url, emulatorArguments: Self.emulator)
        try await whileRunning(fleet) {
            #expect(try await fleet.chappie(1, ["accounts", "add", "work"]).status == 0)
            #expect(try await fleet.chappie(1, ["accounts", "add", "home"]).status == 0)
            let codex1 = fleet.homes[0].appendingPathComponent("codex").path
            let codex2 = fleet.homes[1].appendingPathComponent("codex").path
            let first = try await fleet.chappie(1, ["accounts", "switch", "work", "--codex-home", codex1])
            #expect(first.status == 0, "\(first.stderr)")

            // Only machine 1 refreshes work now: machine 2 never redeems a token machine 1's Codex also holds.
            let before = try await fleet.testbed.control("/_emulator/stats").int("refresh", "redemptions") ?? 0
            let notHere = try await fleet.chappie(2, ["refresh", "work"])
            #expect(notHere.status == 75, "\(notHere.stderr)")
            #expect(notHere.stderr.contains("on machine m1"), "\(notHere.stderr)")
            #expect(try await fleet.testbed.control("/_emulator/stats").int("refresh", "redemptions") == before)
            #expect(try await fleet.chappie(1, ["refresh", "work"]).status == 0)

            // Machine 2 may not put work into its own Codex home: machine 1's Codex refreshes it.
            let refused = try await fleet.chappie(2, ["accounts", "switch", "work", "--codex-home", codex2])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("on machine m1"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: codex2 + "/auth.json"))

            // Each machine has its own active account.
            #expect(try await fleet.chappie(2, ["accounts", "switch", "home", "--codex-home", codex2]).status == 0)
            let onOne = JSONDocument(Data(try await fleet.chappie(1, ["accounts", "list", "--json"]).stdout.utf8))
            let onTwo = JSONDocument(Data(try await fleet.chappie(2, ["accounts", "list", "--json"]).stdout.utf8))
            func active(_ document: JSONDocument) -> String? {
                (0..<(document.array()?.count ?? 0)).first { document.bool($0, "active") == true }.flatMap { document.string($0, "name") }
            }
            #expect(active(onOne) == "work")
            #expect(active(onTwo) == "home")

            // home is in machine 2's Codex home: machine 1 may not take it either.
            #expect(try await fleet.chappie(1, ["accounts", "switch", "home", "--codex-home", codex1]).status != 0)
            // Once machine 1's home holds another account, work is free to move to machine 2.
            #expect(try await fleet.chappie(1, ["accounts", "add", "spare"]).status == 0)
            #expect(try await fleet.chappie(1, ["accounts", "switch", "spare", "--codex-home", codex1]).status == 0)
            let moved = try await fleet.chappie(2, ["accounts", "switch", "work", "--codex-home", codex2])
            #expect(moved.status == 0, "\(moved.stderr)")
            #expect(FileManager.default.fileExists(atPath: codex2 + "/auth.json"))
        }
    }

    @Test(
        "The race: 4 machines × 8 processes ask for tokens for 20 s against one pool, with 2-second tokens; no refresh token is redeemed twice",
        .timeLimit(.minutes(10)))
    func raceAcrossMachines() async throws {
        let (_, url) = try await SharedPostgres.database()
        let fleet = try await PoolFleet.start(machines: 4, url: url, emulatorArguments: Self.emulator + ["--access-token-ttl", "2"])
        try await whileRunning(fleet) {
            let added = try await fleet.chappie(1, ["accounts", "add", "work"])
            #expect(added.status == 0, "\(added.stderr)")
            let clock = ContinuousClock()
            let end = clock.now + .seconds(20)
            // Nearly every call refreshes (2-second tokens, a 1-second margin), so the 32 processes
            // queue for the account's lock. On a loaded machine a wait may pass its limit: that is
            // a temporary failure (75, "try again"), as designed. Anything else is a failure.
            let (failures, waits, calls) = try await withThrowingTaskGroup(of: ([String], Int, Int).self) { group in
                for machine in 1...4 {
                    for worker in 0..<8 {
                        group.addTask {
                            var failures: [String] = []
                            var (waits, calls) = (0, 0)
                            while clock.now < end {
                                let result = try await fleet.chappie(machine, ["token", "work", "--margin", "1s"])
                                if result.status == 75, result.stderr.contains("in flight"), result.stdout.isEmpty {
                                    waits += 1
                                } else if result.status != 0 || result.stdout.split(separator: ".").count != 3 {
                                    failures.append("m\(machine) worker \(worker): exit \(result.status) \(result.stderr)")
                                }
                                calls += 1
                                try await Task.sleep(for: .milliseconds(Int.random(in: 200...800)))
                            }
                            return (failures, waits, calls)
                        }
                    }
                }
                return try await group.reduce(into: ([String](), 0, 0)) {
                    $0.0 += $1.0
                    $0.1 += $1.1
                    $0.2 += $1.2
                }
            }
            #expect(failures.isEmpty, "\(failures.prefix(5))")
            // Waits are load's (a lock wait past its limit is a designed 75); they are counted, not bounded.
            print("race: \(calls) calls, \(waits) waited past the lock's limit")
            let stats = try await fleet.testbed.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0)
            #expect(stats.int("refresh", "tokens_presented_more_than_once") == 0)
            #expect((stats.int("refresh", "redemptions") ?? 0) >= 3, "the test did not make chappie refresh (\(calls) calls)")
            // Refreshes happened on more than one machine (the audit log names each entry's machine).
            let log = JSONDocument(Data(try await fleet.chappie(1, ["log", "--all", "--limit", "500", "--json"]).stdout.utf8))
            let details = (0..<(log.array()?.count ?? 0)).filter { log.string($0, "kind") == "refreshed" }.compactMap { log.string($0, "detail") }
            let refreshers = Set((1...4).filter { machine in details.contains { $0.contains("on m\(machine)") } })
            #expect(refreshers.count >= 2, "\(details)")
        }
    }

    @Test("A refresh another machine has not stored yet: no other machine redeems the token (75) until that machine settles it")
    func unfinishedRefreshBlocksOthers() async throws {
        let (server, url) = try await SharedPostgres.database()
        let fleet = try await PoolFleet.start(machines: 2, url: url, emulatorArguments: Self.emulator + ["--access-token-ttl", "2"])
        try await whileRunning(fleet) {
            #expect(try await fleet.chappie(1, ["accounts", "add", "work"]).status == 0)
            try await Task.sleep(for: .seconds(2))
            // As if machine 1 had redeemed the token and lost the database before storing the new one.
            let instance = try String(contentsOf: fleet.homes[0].appendingPathComponent("pool-instance"), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let marked = try await server.psql(
                "INSERT INTO refresh_intents (account_id, machine, instance) SELECT id, 'm1', '\(instance)' FROM accounts", in: url)
            #expect(marked.status == 0, "\(marked.stderr)")
            let before = try await fleet.testbed.control("/_emulator/stats").int("refresh", "redemptions") ?? 0

            let blocked = try await fleet.chappie(2, ["token", "work"])
            #expect(blocked.status == 75)
            #expect(blocked.stderr.contains("refreshed on machine m1"), "\(blocked.stderr)")
            #expect(try await fleet.testbed.control("/_emulator/stats").int("refresh", "redemptions") == before, "machine 2 must not redeem")

            // A mark of another data directory under machine 2's own name blocks machine 2 too: names are
            // labels, and two data directories on one host share one.
            let other = try await server.psql("UPDATE refresh_intents SET machine = 'm2', instance = gen_random_uuid()", in: url)
            #expect(other.status == 0, "\(other.stderr)")
            #expect(try await fleet.chappie(2, ["token", "work"]).status == 75)
            _ = try await server.psql("UPDATE refresh_intents SET machine = 'm1', instance = '\(instance)'", in: url)

            // Machine 1 has no recovery file: its refresh never redeemed; it settles the mark and refreshes.
            let settled = try await fleet.chappie(1, ["token", "work"])
            #expect(settled.status == 0, "\(settled.stderr)")
            try await Task.sleep(for: .seconds(2))
            let after = try await fleet.chappie(2, ["token", "work"])
            #expect(after.status == 0, "\(after.stderr)")
            #expect(
                try await server.psql("SELECT count(*) FROM refresh_intents", in: url).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
            #expect(try await fleet.testbed.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)
        }
    }

    @Test(
        "Tokens redeemed but not stored (the pool refuses the write): kept in a recovery file, no other machine redeems the spent token, and the next command there stores them"
    )
    func unstoredRefreshIsKeptAndBlocks() async throws {
        let (server, url) = try await SharedPostgres.database()
        let fleet = try await PoolFleet.start(machines: 2, url: url, emulatorArguments: Self.emulator)
        try await whileRunning(fleet) {
            #expect(try await fleet.chappie(1, ["accounts", "add", "work"]).status == 0)
            // The redemption takes 2 s at the issuer; meanwhile the pool starts refusing credential writes.
            _ = try await fleet.testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind":"latency","ms":2000,"count":1,"path":"/oauth/token"}"#)
            let refreshing = Task { try await fleet.chappie(1, ["refresh", "work"]) }
            try await Task.sleep(for: .milliseconds(700))
            let refuse = try await server.psql("ALTER TABLE sealed_credentials ADD CONSTRAINT refuse_writes CHECK (false) NOT VALID", in: url)
            #expect(refuse.status == 0, "\(refuse.stderr)")
            let failed = try await refreshing.value
            #expect(failed.status != 0)
            #expect(failed.stderr.contains("kept sealed in"), "\(failed.stderr)")
            let recovery = try FileManager.default.contentsOfDirectory(atPath: fleet.homes[0].appendingPathComponent("recovery").path)
            #expect(recovery.count == 1)
            #expect(
                try await server.psql("SELECT count(*) FROM refresh_intents", in: url).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1")

            // Machine 2 must not redeem the token machine 1 spent.
            let redeemed = try await fleet.testbed.control("/_emulator/stats").int("refresh", "redemptions") ?? 0
            let blocked = try await fleet.chappie(2, ["refresh", "work"])
            #expect(blocked.status == 75)
            #expect(blocked.stderr.contains("refreshed on machine m1"), "\(blocked.stderr)")
            #expect(try await fleet.testbed.control("/_emulator/stats").int("refresh", "redemptions") == redeemed)

            // The pool takes writes again: machine 1's next command stores the kept tokens, and all goes on.
            _ = try await server.psql("ALTER TABLE sealed_credentials DROP CONSTRAINT refuse_writes", in: url)
            let stored = try await fleet.chappie(1, ["token", "work"])
            #expect(stored.status == 0, "\(stored.stderr)")
            #expect(
                try await server.psql("SELECT count(*) FROM refresh_intents", in: url).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
            let after = try await fleet.chappie(2, ["refresh", "work"])
            #expect(after.status == 0, "\(after.stderr)")
            let stats = try await fleet.testbed.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0)
            #expect(stats.int("refresh", "tokens_presented_more_than_once") == 0)
        }
    }

    @Test("PostgreSQL restarted mid-run: clients answer 'try again later' (75), no token is redeemed twice, nothing is lost, work resumes")
    func serverRestart() async throws {
        let server = try await PostgresServer.start()
        try await whileRunning(server) {
            let url = try await server.createDatabase()
            let fleet = try await PoolFleet.start(machines: 2, url: url, emulatorArguments: Self.emulator + ["--access-token-ttl", "2"])
            try await whileRunning(fleet) {
                #expect(try await fleet.chappie(1, ["accounts", "add", "work"]).status == 0)

                // Down until calls have failed on it (however slow the machine), then up; the calls go on
                // for a few rounds after.
                final class Counts: Sendable {
                    let failures = Mutex(0), calls = Mutex(0), callsAtRestart = Mutex<Int?>(nil)
                }
                let counts = Counts()
                let restart = Task {
                    // Whatever happens, the calls end.
                    defer { counts.callsAtRestart.withLock { $0 = $0 ?? counts.calls.withLock { $0 } } }
                    try await Task.sleep(for: .seconds(3))
                    try await server.restart {
                        for _ in 0..<600 where counts.failures.withLock({ $0 }) < 2 { try? await Task.sleep(for: .milliseconds(100)) }
                    }
                    counts.callsAtRestart.withLock { $0 = counts.calls.withLock { $0 } }
                }
                let statuses = try await withThrowingTaskGroup(of: [ProcessResult].self) { group in
                    for machine in 1...2 {
                        for _ in 0..<3 {
                            group.addTask {
                                var results: [ProcessResult] = []
                                while counts.callsAtRestart.withLock({ $0 }).map({ at in counts.calls.withLock { $0 } < at + 12 }) ?? true {
                                    let result = try await fleet.chappie(machine, ["token", "work", "--margin", "1s"])
                                    results.append(result)
                                    counts.calls.withLock { $0 += 1 }
                                    if result.status != 0 { counts.failures.withLock { $0 += 1 } }
                                    try await Task.sleep(for: .milliseconds(300))
                                }
                                return results
                            }
                        }
                    }
                    return try await group.reduce(into: [ProcessResult]()) { $0 += $1 }
                }
                try await restart.value
                let failed = statuses.filter { $0.status != 0 }
                #expect(!failed.isEmpty, "the restart did not fail any call; the test did not test it")
                for result in failed {
                    #expect(result.status == 75, "\(result.stderr)")
                    // Either the pool could not be reached, or a redeemed token is kept for the next command to store.
                    #expect(result.stderr.contains("try again later") || result.stderr.contains("are kept sealed in"), "stderr: \(result.stderr)")
                }
                // Work resumes, and the account was never lost.
                let after = try await fleet.chappie(2, ["token", "work", "--margin", "1s"])
                #expect(after.status == 0, "\(after.stderr)")
                let list = JSONDocument(Data(try await fleet.chappie(1, ["accounts", "list", "--json"]).stdout.utf8))
                #expect(list.string(0, "status") == "ok", "\(list)")
                let stats = try await fleet.testbed.control("/_emulator/stats")
                #expect(stats.int("refresh", "reuse_detected") == 0)
            }
        }
    }

    @Test("Three daemons on three machines share the polls: each account is polled about once per interval, not once per machine")
    func onePollerPerAccount() async throws {
        let (server, url) = try await SharedPostgres.database()
        let fleet = try await PoolFleet.start(machines: 3, url: url, emulatorArguments: Self.emulator)
        try await whileRunning(fleet) {
            for name in ["a", "b"] { #expect(try await fleet.chappie(1, ["accounts", "add", name]).status == 0) }
            let before = try await fleet.testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") ?? 0
            var daemons: [ChildProcess] = []
            for machine in 1...3 {
                let log = try FileHandle(
                    forWritingTo: {
                        let file = fleet.homes[machine - 1].appendingPathComponent("daemon.log")
                        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
                        return file
                    }())
                defer { try? log.close() }
                daemons.append(
                    try ChildProcess(
                        try BuiltProducts.executable("chappie"),
                        [
                            "daemon", "--poll-interval", "3s", "--log-format", "json", "--issuer", fleet.testbed.emulator.issuer, "--backend",
                            fleet.testbed.emulator.backend, "--home", fleet.homes[machine - 1].path, "--machine", "m\(machine)",
                            "--stop-when-stdin-closes",
                        ],
                        environment: ["CHAPPIE_STORE_URL": fleet.url], stdin: .lifeline, stdout: .descriptor(log.fileDescriptor),
                        stderr: .descriptor(log.fileDescriptor)))
            }
            // Until the fleet has made 8 polls (four intervals' worth of 2 accounts), however slow the machine.
            for _ in 0..<600 {
                let polls = (try await fleet.testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") ?? 0) - before
                if polls >= 8 { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            for daemon in daemons { daemon.terminate() }
            for daemon in daemons { await daemon.waitUntilExit() }
            let end = Date().timeIntervalSince1970
            let polls = (try await fleet.testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") ?? 0) - before
            // From the first reading on (daemons' start-up does not count). A claim lasts 0.8 of the
            // 3-second interval: at most one poll per account per 2.4 s fleet-wide, and one more for
            // the first poll's own time before its reading. Three daemons polling on their own would
            // make three polls per account per 3 s.
            let first = try await server.psql("SELECT min(observed_at) FROM usage_samples WHERE source = 'poll'", in: url)
            let span = try #require(Double(first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).map { end - $0 }, "\(first.stderr)")
            #expect(polls >= 8, "the daemons did not poll")
            #expect(Double(polls) <= 2 * (span / 2.4 + 2), "\(polls) polls of 2 accounts in \(span) s from the first reading")
            // The report by machine covers the fleet: every row's machine is one of the three.
            let report = try await fleet.chappie(1, ["usage", "report", "--by", "machine", "--format", "json"])
            #expect(report.status == 0, "\(report.stderr)")
            let rows = JSONDocument(Data(report.stdout.utf8))
            let machines = Set((0..<(rows.array()?.count ?? 0)).compactMap { rows.string($0, "machine") })
            #expect(!machines.isEmpty && machines.isSubset(of: ["m1", "m2", "m3"]), "\(report.stdout)")
            let reported = (0..<(rows.array()?.count ?? 0)).compactMap { rows.int($0, "samples") }.reduce(0, +)
            // A poll the emulator answered as SIGTERM came may be dropped (a reading is not kept at
            // shutdown, unlike a refresh): at most one per daemon.
            #expect(reported >= polls - 3, "the report counts \(reported) readings, the emulator answered \(polls) polls")
            // The polls are recorded with the machine that made them.
            let log = JSONDocument(Data(try await fleet.chappie(1, ["log", "--all", "--limit", "500", "--json"]).stdout.utf8))
            let pollers = Set(
                (0..<(log.array()?.count ?? 0)).filter { log.string($0, "kind") == "usage_polled" }.compactMap { index in
                    (1...3).first { log.string(index, "detail")?.hasSuffix("(on m\($0))") == true }
                })
            #expect(!pollers.isEmpty)
        }
    }

    @Test("A ca-file row written into the pool for a machine is ignored, with a warning: whom a machine trusts is its own setting")
    func caFileRowInThePoolIgnored() async throws {
        let (server, url) = try await SharedPostgres.database()
        let fleet = try await PoolFleet.start(machines: 1, url: url, emulatorArguments: Self.emulator)
        try await whileRunning(fleet) {
            #expect(try await fleet.chappie(1, ["accounts", "add", "a"]).status == 0)
            let planted = try await server.psql(
                "INSERT INTO machine_settings (machine, key, value) VALUES ('m1', 'ca_file', convert_to('/tmp/attacker-ca.pem', 'UTF8'))", in: url)
            #expect(planted.status == 0, "\(planted.stderr)")
            let refreshed = try await fleet.chappie(1, ["refresh", "a"])
            #expect(refreshed.status == 0, "the planted file was not used: \(refreshed.stderr)")
            #expect(refreshed.stderr.contains("the team pool sets ca-file for this machine; chappie ignores it"), "\(refreshed.stderr)")
            #expect(try await fleet.chappie(1, ["config", "get", "ca-file"]).stdout == "\n")
        }
    }

    @Test(
        "Alerts on a pool: each machine's targets stay in its own settings, never the pool; a threshold is told by the daemons that polled it, once each, not once a poll"
    )
    func alertsOnAPool() async throws {
        let (server, url) = try await SharedPostgres.database()
        let fleet = try await PoolFleet.start(machines: 2, url: url, emulatorArguments: Self.emulator)
        try await whileRunning(fleet) {
            #expect(try await fleet.chappie(1, ["accounts", "add", "a"]).status == 0)
            let webhook = fleet.testbed.emulator.issuer + "/_emulator/webhooks"
            #expect(try await fleet.chappie(1, ["config", "set", "alert-webhook", webhook]).status == 0)
            // Machine 2 does not see machine 1's target, and the pool's database holds no trace of it.
            let unset = try await fleet.chappie(2, ["config", "get", "alert-webhook"])
            #expect(unset.status == 0 && !unset.stdout.contains("_emulator"), "\(unset.stdout)\(unset.stderr)")
            let dump = try await server.dump(url)
            #expect(dump.status == 0, "\(dump.stderr)")
            #expect(dump.stdout.contains("COPY public.accounts"), "\(dump.stdout.prefix(400))")
            // The audit entry of the change is the pool's, with the webhook redacted (its path left out).
            #expect(!dump.stdout.contains("_emulator/webhooks"), "the pool holds a webhook")
            let mentions = dump.stdout.split(separator: "\n").filter { $0.contains("alert-webhook") }
            #expect(
                mentions.count == 1 && mentions.allSatisfy { $0.contains("alert-webhook (this machine) set to http://127.0.0.1:") }, "\(mentions)")
            #expect(try await fleet.chappie(2, ["config", "set", "alert-webhook", webhook]).status == 0)

            let id = try #require(try await fleet.testbed.control("/_emulator/accounts").string(0, "account_id"))
            _ = try await fleet.testbed.control("/_emulator/accounts/\(id)/usage", method: "POST", body: #"{"five_hour_used_percent":85}"#)
            let before = try await fleet.testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") ?? 0
            var daemons: [ChildProcess] = []
            for machine in 1...2 {
                daemons.append(
                    try ChildProcess(
                        try BuiltProducts.executable("chappie"),
                        [
                            "daemon", "--poll-interval", "1s", "--issuer", fleet.testbed.emulator.issuer, "--backend", fleet.testbed.emulator.backend,
                            "--home", fleet.homes[machine - 1].path, "--machine", "m\(machine)", "--stop-when-stdin-closes",
                        ],
                        environment: ["CHAPPIE_STORE_URL": fleet.url], stdin: .lifeline))
            }
            // Until both daemons have polled the account (each reading names its machine), however slow the machine.
            func pollers() async throws -> Int {
                let count = try await server.psql("SELECT count(DISTINCT machine) FROM usage_samples WHERE source = 'poll'", in: url)
                return Int(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            }
            for _ in 0..<600 {
                let polls = (try await fleet.testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") ?? 0) - before
                if polls >= 4, try await pollers() == 2 { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            try #require(try await pollers() == 2, "both daemons polled the account")
            for daemon in daemons { daemon.terminate() }
            for daemon in daemons { await daemon.waitUntilExit() }
            let bodies = try await fleet.testbed.control("/_emulator/webhooks").root as? [String] ?? []
            let events = bodies.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            // What fired is kept per machine (docs/operations.md, "Alerts"): each daemon that polled
            // the full window tells it once, to its own targets (here the same webhook for both).
            let polls = (try await fleet.testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") ?? 0) - before
            #expect(polls >= 4)
            #expect((1...2).contains(events.count), "one threshold, at most once per daemon, in \(polls) polls: \(bodies)")
            #expect(events.allSatisfy { $0["event"] as? String == "threshold" && $0["threshold"] as? Int == 80 }, "\(bodies)")
        }
    }

    @Test("pool migrate --from-sqlite moves a single-user store's accounts, tokens and usage history into the pool, and out of the local store")
    func migrateFromSQLite() async throws {
        let (_, url) = try await SharedPostgres.database()
        let testbed = try await ChappieTestbed.start(emulatorArguments: Self.emulator)
        try await whileRunning(testbed) {
            for name in ["work", "home"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            #expect(try await testbed.chappie(["usage", "poll", "--all"]).status == 0)
            let codexHome = testbed.home.appendingPathComponent("codex").path
            #expect(try await testbed.chappie(["accounts", "switch", "work", "--codex-home", codexHome]).status == 0)
            let token = try await testbed.chappie(["token", "work"]).stdout
            let history = JSONDocument(Data(try await testbed.chappie(["usage", "history", "work", "--json"]).stdout.utf8)).array()?.count ?? 0
            #expect(history > 0)

            // A copy of the local store as it was, to play a run whose answer was lost.
            let saved = testbed.home.appendingPathComponent("saved")
            try FileManager.default.createDirectory(at: saved, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.copyItem(at: testbed.home.appendingPathComponent("chappie.key"), to: saved.appendingPathComponent("chappie.key"))
            #expect(
                try await runProcess(
                    URL(fileURLWithPath: "/usr/bin/sqlite3"),
                    [testbed.home.appendingPathComponent("chappie.sqlite").path, ".backup '\(saved.path)/chappie.sqlite'"]
                ).status == 0)
            let moved = try await testbed.chappie(["--store", url, "pool", "migrate", "--from-sqlite"])
            #expect(moved.status == 0, "\(moved.stderr)")
            #expect(moved.stdout.contains("Moved 2 accounts"), "\(moved.stdout)")
            // Out of the local store; in the pool with the same tokens, history and Codex home.
            #expect(JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8)).array()?.count == 0)
            let pooled = JSONDocument(Data(try await testbed.chappie(["--store", url, "accounts", "list", "--json"]).stdout.utf8))
            #expect(pooled.array()?.count == 2)
            #expect(try await testbed.chappie(["--store", url, "token", "work"]).stdout == token)
            let pooledHistory = JSONDocument(Data(try await testbed.chappie(["--store", url, "usage", "history", "work", "--json"]).stdout.utf8))
            #expect(pooledHistory.array()?.count == history)
            let work = (0..<2).first { pooled.string($0, "name") == "work" }
            #expect(work.flatMap { pooled.string($0, "codexHome") } == codexHome)

            // The same accounts again (as if the first run's answer had been lost): they count as moved,
            // leave the local store, and the pool still has each once.
            let restored = try await testbed.chappie(["--store", url, "pool", "migrate", "--from-sqlite", saved.path])
            #expect(restored.status == 0, "\(restored.stdout) \(restored.stderr)")
            #expect(restored.stdout.contains("Moved 2 accounts"), "\(restored.stdout)")
            #expect(
                JSONDocument(Data(try await testbed.chappie(["--home", saved.path, "accounts", "list", "--json"]).stdout.utf8)).array()?.count == 0)
            #expect(JSONDocument(Data(try await testbed.chappie(["--store", url, "accounts", "list", "--json"]).stdout.utf8)).array()?.count == 2)

            // The same ChatGPT account signed in locally again is not moved twice: it is left, and said so.
            _ = try await testbed.control("/_emulator/device/next", method: "POST", body: #"{"email":"user1@example.com"}"#)
            #expect(try await testbed.chappie(["accounts", "add", "again"]).status == 0)
            let again = try await testbed.chappie(["--store", url, "pool", "migrate", "--from-sqlite"])
            #expect(again.status == 1)
            #expect(again.stdout.contains("the pool has this ChatGPT account already"), "\(again.stdout)")
            #expect(JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8)).array()?.count == 1)
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0)
        }
    }

    @Test("pool migrate killed (SIGKILL) at random moments, 20 times: never a usable copy in both stores; running it again finishes the move")
    func killedMigrationLeavesOneCopy() async throws {
        let (_, url) = try await SharedPostgres.database()
        let testbed = try await ChappieTestbed.start(emulatorArguments: [
            "--auto-approve", "--auto-approve-delay", "0", "--device-code-interval", "1",
        ])
        try await whileRunning(testbed) {
            let migrate = testbed.service + ["--store", url, "pool", "migrate", "--from-sqlite"]
            // How long an uninterrupted move of one account takes here; kills aim inside it.
            #expect(try await testbed.chappie(["accounts", "add", "first"]).status == 0)
            let clock = ContinuousClock()
            let start = clock.now
            #expect(try await testbed.chappie(["--store", url, "pool", "migrate", "--from-sqlite"]).status == 0)
            var span = clock.now - start
            var outcomes: [String: Int] = [:]
            var killed = 0
            // Until 20 moves were killed (at most 40 rounds): a move that finished first (a loaded
            // machine runs them at varying speed) makes the next kill come sooner.
            var rounds = 0
            for round in 1...40 where killed < 20 {
                rounds = round
                let name = "r\(round)"
                #expect(try await testbed.chappie(["accounts", "add", name]).status == 0)
                let process = try ChildProcess(try BuiltProducts.executable("chappie"), migrate)
                try await Task.sleep(for: span * Double.random(in: 0.2...1.1))
                if process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                    killed += 1
                    span = span * 1.1
                } else {
                    span = span / 2
                }
                await process.waitUntilExit()
                let local = try await testbed.chappie(["token", name])
                let pooled = try await testbed.chappie(["--store", url, "token", name])
                #expect(local.status != 0 || pooled.status != 0, "round \(round): usable in both stores")
                let outcome = local.status == 0 ? "local" : pooled.status == 0 ? "pool" : "neither (marked, not yet in the pool)"
                outcomes[outcome, default: 0] += 1
                if local.status != 0, pooled.status != 0 {
                    // A marked local copy says why and what to do.
                    #expect(local.stderr.contains("chappie pool migrate --from-sqlite"), "round \(round): \(local.stderr)")
                }
                // Running it again finishes the move: the account is in the pool only, and works there.
                let again = try await testbed.chappie(["--store", url, "pool", "migrate", "--from-sqlite"])
                #expect(again.status == 0, "round \(round): \(again.stdout) \(again.stderr)")
                #expect(
                    JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8)).array()?.count == 0, "round \(round)")
                #expect(try await testbed.chappie(["--store", url, "token", name]).status == 0, "round \(round)")
            }
            print("killed pool migrate: \(killed) of \(rounds) rounds killed; afterwards usable in: \(outcomes.sorted { $0.key < $1.key })")
            #expect(killed >= 10, "too few moves were interrupted to test anything")
            #expect(try await testbed.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)
        }
    }

    @Test(
        "pool migrate killed at its two critical moments: marked but not yet in the pool (usable nowhere), in the pool but not yet out of the local store (usable in the pool only)"
    )
    func killedMigrationAtEachStep() async throws {
        let (server, url) = try await SharedPostgres.database()
        let testbed = try await ChappieTestbed.start(emulatorArguments: [
            "--auto-approve", "--auto-approve-delay", "0", "--device-code-interval", "1",
        ])
        try await whileRunning(testbed) {
            let database = testbed.home.appendingPathComponent("chappie.sqlite").path
            func sqlite(_ sql: String) async throws -> String {
                try await runProcess(URL(fileURLWithPath: "/usr/bin/sqlite3"), [database, sql]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            func waitFor(_ what: String, _ condition: () async throws -> Bool) async throws {
                for _ in 0..<600 {
                    if try await condition() { return }
                    try await Task.sleep(for: .milliseconds(50))
                }
                Issue.record("\(what) did not happen within 30 s")
            }
            // The pool's tables exist once something was moved.
            #expect(try await testbed.chappie(["accounts", "add", "first"]).status == 0)
            #expect(try await testbed.chappie(["--store", url, "pool", "migrate", "--from-sqlite"]).status == 0)
            let migrate = testbed.service + ["--store", url, "pool", "migrate", "--from-sqlite"]

            // 1. The pool's accounts table locked: the move marks the account, then waits on the pool.
            #expect(try await testbed.chappie(["accounts", "add", "one"]).status == 0)
            var lock = try await server.lock("accounts", in: url)
            var process = try ChildProcess(try BuiltProducts.executable("chappie"), migrate)
            try await waitFor("the mark") { try await sqlite("SELECT count(*) FROM pool_moves") == "1" }
            kill(process.processIdentifier, SIGKILL)
            await process.waitUntilExit()
            try await server.release(lock, in: url)
            let marked = try await testbed.chappie(["token", "one"])
            #expect(marked.status == 78 && marked.stderr.contains("chappie pool migrate --from-sqlite"), "\(marked.stderr)")
            #expect(try await testbed.chappie(["--store", url, "token", "one"]).status != 0, "not in the pool yet")
            #expect(try await testbed.chappie(["--store", url, "pool", "migrate", "--from-sqlite"]).status == 0)
            #expect(try await testbed.chappie(["--store", url, "token", "one"]).status == 0)

            // 2. The local store write-locked once the account is marked: the pool takes it, and the
            //    local removal waits.
            #expect(try await testbed.chappie(["accounts", "add", "two"]).status == 0)
            lock = try await server.lock("accounts", in: url)
            process = try ChildProcess(try BuiltProducts.executable("chappie"), migrate)
            try await waitFor("the mark") { try await sqlite("SELECT count(*) FROM pool_moves") == "1" }
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            let said = testbed.home.appendingPathComponent("sqlite3.out")
            _ = FileManager.default.createFile(atPath: said.path, contents: nil)
            let output = try FileHandle(forWritingTo: said)
            let writer = try ChildProcess(
                URL(fileURLWithPath: "/usr/bin/sqlite3"), [database], stdin: .descriptor(fds[0]), stdout: .descriptor(output.fileDescriptor))
            close(fds[0])
            try output.close()
            func send(_ text: String) { _ = text.withCString { write(fds[1], $0, strlen($0)) } }
            send("BEGIN IMMEDIATE;\nSELECT 'locked';\n")
            try await waitFor("the local write lock") { (try? String(contentsOf: said, encoding: .utf8))?.contains("locked") == true }
            try await server.release(lock, in: url)
            try await waitFor("the pool's copy") {
                try await server.psql("SELECT count(*) FROM accounts WHERE name = 'two'", in: url).stdout.contains("1")
            }
            kill(process.processIdentifier, SIGKILL)
            await process.waitUntilExit()
            send("ROLLBACK;\n.quit\n")
            close(fds[1])
            await writer.waitUntilExit()
            let local = try await testbed.chappie(["token", "two"])
            #expect(local.status == 78, "the local copy is not used: \(local.stderr)")
            #expect(try await testbed.chappie(["--store", url, "token", "two"]).status == 0, "the pool's is")
            #expect(try await testbed.chappie(["--store", url, "pool", "migrate", "--from-sqlite"]).status == 0)
            #expect(JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8)).array()?.count == 0)
            #expect(try await testbed.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)
        }
    }

    @Test("The pool's key replaced while a daemon runs: the daemon says so once and goes on, and writes nothing it could not open")
    func daemonOutlivesAKeyChange() async throws {
        let (server, url) = try await SharedPostgres.database()
        let fleet = try await PoolFleet.start(machines: 1, url: url, emulatorArguments: Self.emulator)
        try await whileRunning(fleet) {
            #expect(try await fleet.chappie(1, ["accounts", "add", "work"]).status == 0)
            let logFile = fleet.homes[0].appendingPathComponent("daemon.log")
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
            let log = try FileHandle(forWritingTo: logFile)
            defer { try? log.close() }
            let daemon = try ChildProcess(
                try BuiltProducts.executable("chappie"),
                [
                    "daemon", "--poll-interval", "1h", "--log-format", "json", "--issuer", fleet.testbed.emulator.issuer, "--backend",
                    fleet.testbed.emulator.backend, "--home", fleet.homes[0].path, "--machine", "m1", "--stop-when-stdin-closes",
                ],
                environment: ["CHAPPIE_STORE_URL": fleet.url], stdin: .lifeline, stdout: .descriptor(log.fileDescriptor),
                stderr: .descriptor(log.fileDescriptor))
            let socket = fleet.homes[0].appendingPathComponent("chappie.sock").path
            for _ in 0..<600 where !FileManager.default.fileExists(atPath: socket) { try await Task.sleep(for: .milliseconds(50)) }
            // Another key's id and check, as an operator replacing the pool's key would leave them.
            let replaced = try await server.psql(
                "UPDATE settings SET value = CASE key WHEN 'key_id' THEN convert_to('0123456789abcdef', 'UTF8') ELSE gen_random_bytes(60) END WHERE key IN ('key_id', 'key_check')",
                in: url)
            if replaced.status != 0 {
                // gen_random_bytes needs pgcrypto; any 60 bytes will do.
                _ = try await server.psql(
                    "UPDATE settings SET value = CASE key WHEN 'key_id' THEN convert_to('0123456789abcdef', 'UTF8') ELSE decode(repeat('ab', 60), 'hex') END WHERE key IN ('key_id', 'key_check')",
                    in: url)
            }
            var said = false
            for _ in 0..<300 where !said {
                try await Task.sleep(for: .milliseconds(100))
                said = ((try? String(contentsOf: logFile, encoding: .utf8)) ?? "").contains("the pool's key was changed")
            }
            #expect(said, "the daemon did not say the key changed")
            // Still running: its socket answers.
            let status = try await fleet.chappie(1, ["status", "--json"])
            #expect(status.status == 0, "\(status.stderr)")
            daemon.terminate()
            await daemon.waitUntilExit()
            // A command on this machine is refused with the key's story, and nothing was written.
            let refused = try await fleet.chappie(1, ["token", "work"])
            #expect(refused.status == 78)
            #expect(refused.stderr.contains("0123456789abcdef"), "\(refused.stderr)")
        }
    }

    @Test("Bad store addresses: a clear error and exit 78 (or 75 for an unreachable server), never the password")
    func badAddresses() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let cases: [(String, Int32, String)] = [
                ("mysql://u:hunter2-secret@db/pool", 78, "not a postgres:// URL"),
                ("postgres://u:hunter2-secret@/pool?host=/nonexistent-dir", 75, "cannot be reached"),
                ("postgres://u:hunter2-secret@db.example/pool?sslmode=sometimes", 78, "sslmode=sometimes"),
                ("postgres://u:hunter2-secret@db.example/pool?colour=blue", 78, "colour"),
                ("postgres://:hunter2-secret@db.example/pool", 78, "names no user"),
            ]
            for (url, status, words) in cases {
                let result = try await testbed.chappie(["--store", url, "accounts", "list"])
                #expect(result.status == status, "\(url): \(result.stderr)")
                #expect(result.stderr.contains(words), "\(url): \(result.stderr)")
                #expect(!result.stderr.contains("hunter2") && !result.stdout.contains("hunter2"))
            }
            // A store-url file that others can read is refused before it is used.
            let file = testbed.home.appendingPathComponent("store-url")
            try "postgres://u:hunter2-secret@/pool?host=/nonexistent-dir\n".write(to: file, atomically: true, encoding: .utf8)
            chmod(file.path, 0o644)
            let open = try await testbed.chappie(["accounts", "list"])
            #expect(open.status == 78)
            #expect(open.stderr.contains("chmod 600"), "\(open.stderr)")
            #expect(!open.stderr.contains("hunter2"))
            chmod(file.path, 0o600)
            #expect(try await testbed.chappie(["accounts", "list"]).status == 75, "the store-url file selects the pool")
            #expect(try await testbed.chappie(["--store", "", "accounts", "list"]).status == 0, "an empty --store means the local store")
        }
    }
}

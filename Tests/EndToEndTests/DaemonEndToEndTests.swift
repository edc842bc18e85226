import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie daemon: refreshing, polling, faults, auto-switch and the socket", .tags(.slow))
struct DaemonEndToEndTests {
    private typealias Setup = ChappieTestbed

    private func setUp(_ emulatorArguments: [String], accounts: [String]) async throws -> ChappieTestbed {
        let setup = try await ChappieTestbed.start(
            emulatorArguments: ["--auto-approve", "--auto-approve-delay", "0", "--device-code-interval", "1"] + emulatorArguments)
        for name in accounts { #expect(try await setup.chappie(["accounts", "add", name]).status == 0) }
        return setup
    }

    @Test("Short-lived tokens refreshed before expiry for 20 s beside CLI calls; tokens through the socket; no refresh token used twice")
    func refreshesBeforeExpiry() async throws {
        let setup = try await setUp(["--access-token-ttl", "4"], accounts: ["a", "b", "c"])
        try await whileRunning(setup) {
            let daemon = try setup.startDaemon(["--refresh-margin", "2s", "--poll-interval", "2s"])
            try await setup.waitForSocket()
            let socket = setup.home.appendingPathComponent("chappie.sock")
            #expect((try FileManager.default.attributesOfItem(atPath: socket.path)[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            let end = ContinuousClock.now + .seconds(20)
            var failures: [String] = []
            while ContinuousClock.now < end {
                for name in ["a", "b", "c"] {
                    // The daemon answers after this moment with a token valid for at least the margin: one
                    // that expired before the question was asked is wrong however slow the machine is.
                    let asked = Date().timeIntervalSince1970
                    let token = try await setup.chappie(["token", name, "--margin", "1s", "--json"])
                    let json = JSONDocument(Data(token.stdout.utf8))
                    if token.status != 0 || json.string("account") != name { failures.append("\(name): \(token.status) \(token.stderr)") }
                    if let expires = json.number("expiresAt")
                        ?? json.string("expiresAt").flatMap({ try? Date($0, strategy: .iso8601).timeIntervalSince1970 }),
                        expires < asked
                    {
                        failures.append("\(name): an expired token was handed out")
                    }
                }
                try await Task.sleep(for: .milliseconds(700))
            }
            #expect(failures.isEmpty, "\(failures.prefix(3))")
            let status = try await setup.daemonStatus()
            #expect((status.int("daemon", "refreshes") ?? 0) >= 6, "the daemon did not refresh on its own")
            #expect((status.int("daemon", "polls") ?? 0) >= 6)
            let stats = try await setup.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0)
            #expect(stats.int("refresh", "tokens_presented_more_than_once") == 0)
            #expect(await setup.stop(daemon) == 0)
            #expect(!FileManager.default.fileExists(atPath: socket.path))
        }
    }

    @Test("--stop-when-stdin-closes: the daemon stops cleanly, its socket gone, when whoever holds its standard input closes it or dies")
    func stopsWhenItsLifelineCloses() async throws {
        let setup = try await setUp([], accounts: ["a"])
        try await whileRunning(setup) {
            let lifeline = try ChildPipe()
            let daemon = try ChildProcess(
                try BuiltProducts.executable("chappie"), ["daemon", "--stop-when-stdin-closes"] + setup.service,
                stdin: .descriptor(lifeline.reading.fileDescriptor))
            try lifeline.reading.close()
            try await setup.waitForSocket()
            #expect(daemon.isRunning)
            try lifeline.writing.close()
            while daemon.isRunning { try await Task.sleep(for: .milliseconds(20)) }
            #expect(await daemon.terminationStatus == 0)
            #expect(!FileManager.default.fileExists(atPath: setup.home.appendingPathComponent("chappie.sock").path))
        }
    }

    @Test("SIGTERM while refreshes are at the server: the daemon stops cleanly and nothing is lost")
    func sigtermMidRefresh() async throws {
        let setup = try await setUp(["--access-token-ttl", "3"], accounts: ["a", "b"])
        try await whileRunning(setup) {
            _ = try await setup.control(
                "/_emulator/faults", method: "POST", body: #"{"kind":"latency","ms":300,"count":100000,"path":"/oauth/token"}"#)
            for round in 0..<4 {
                let log = "daemon-\(round).log"
                let daemon = try setup.startDaemon(["--refresh-margin", "3s", "--poll-interval", "60s"], log: log)
                // A signal before the daemon has started ends it by its default action (see the next
                // test); this one is about a signal while its refreshes are at the server.
                try await setup.waitForLog(log, containing: "daemon started")
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...800)))
                // stop() sends SIGTERM and waits for the exit (SIGKILL only after 30 s): exit 0 means it stopped cleanly.
                let status = await setup.stop(daemon)
                #expect(status == 0, "round \(round): status \(status); log: \(setup.log(log).suffix(1500))")
                let refresh = try await setup.chappie(["refresh", "--all"])
                #expect(refresh.status == 0, "round \(round): \(refresh.stderr)")
            }
            #expect(try await setup.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)
        }
    }

    @Test("SIGTERM at any moment of the start-up: the daemon ends by itself, never needing SIGKILL (no moment where the signal is dropped)")
    func sigtermDuringStartUp() async throws {
        let setup = try await setUp([], accounts: ["a"])
        try await whileRunning(setup) {
            // From the first instructions to a running service group, 25 ms apart. Before the daemon
            // command takes the signals (it has not started anything yet) the default action ends it
            // (status 15); once it has started, only a clean stop (0) will do.
            for delay in stride(from: 0, through: 600, by: 25) {
                let daemon = try setup.startDaemon(["--poll-interval", "60s"], log: "daemon-\(delay).log")
                try await Task.sleep(for: .milliseconds(delay))
                let status = await setup.stop(daemon)
                let log = setup.log("daemon-\(delay).log")
                #expect(status == 0 || status == SIGTERM, "SIGTERM after \(delay) ms: status \(status); log: \(log.suffix(1500))")
                if log.contains("daemon started") {
                    #expect(
                        status == 0 && log.contains("daemon stopped"),
                        "SIGTERM after \(delay) ms, once started: status \(status); log: \(log.suffix(1500))")
                }
            }
        }
    }

    @Test("5xx, then dropped connections: the daemon keeps running, backs off, and recovers when the service does")
    func survivesFaults() async throws {
        let setup = try await setUp(["--access-token-ttl", "6"], accounts: ["a", "b"])
        try await whileRunning(setup) {
            let daemon = try setup.startDaemon(["--refresh-margin", "4s", "--poll-interval", "1s", "--backoff", "1s", "--max-backoff", "3s"])
            try await setup.waitForSocket()
            _ = try await setup.control("/_emulator/faults", method: "POST", body: #"{"kind":"status","status":503,"count":100000}"#)
            try await Task.sleep(for: .seconds(8))
            _ = try await setup.control("/_emulator/faults", method: "DELETE")
            _ = try await setup.control("/_emulator/faults", method: "POST", body: #"{"kind":"drop","count":100000}"#)
            try await Task.sleep(for: .seconds(5))
            let during = try await setup.daemonStatus()
            #expect((during.int("daemon", "refreshFailures") ?? 0) + (during.int("daemon", "pollFailures") ?? 0) > 0)
            #expect(daemon.isRunning)
            _ = try await setup.control("/_emulator/faults", method: "DELETE")
            let refreshesBefore = during.int("daemon", "refreshes") ?? 0
            var recovered = false
            for _ in 0..<40 {
                try await Task.sleep(for: .milliseconds(500))
                let status = try await setup.daemonStatus()
                if (status.int("daemon", "refreshes") ?? 0) > refreshesBefore, status.string("accounts", 0, "status") == "ok" {
                    recovered = true
                    break
                }
            }
            #expect(recovered, "the daemon did not refresh again after the faults ended")
            #expect(try await setup.chappie(["token", "a"]).status == 0)
            #expect(await setup.stop(daemon) == 0)
        }
    }

    @Test("Auto-switch happens once per limit event, not in a loop, and is in the audit log")
    func autoSwitchOnce() async throws {
        let setup = try await setUp([], accounts: ["a", "b"])
        try await whileRunning(setup) {
            #expect(try await setup.chappie(["accounts", "switch", "a"]).status == 0)
            let accounts = try await setup.control("/_emulator/accounts")
            let a = try #require(accounts.string(0, "account_id")), b = try #require(accounts.string(1, "account_id"))
            let codexHome = setup.home.appendingPathComponent("codex")
            let daemon = try setup.startDaemon(["--poll-interval", "1s", "--auto-switch", "--codex-home", codexHome.path])
            try await setup.waitForSocket()
            _ = try await setup.control("/_emulator/accounts/\(a)/usage", method: "POST", body: #"{"five_hour_used_percent":100}"#)
            var switched = false
            for _ in 0..<40 {
                try await Task.sleep(for: .milliseconds(250))
                if try await setup.chappie(["accounts", "current"]).stdout == "b\n" {
                    switched = true
                    break
                }
            }
            #expect(switched)
            #expect(FileManager.default.fileExists(atPath: codexHome.appendingPathComponent("auth.json").path))
            // b fills up too while a is still full: nowhere to go, so no switching back and forth.
            _ = try await setup.control("/_emulator/accounts/\(b)/usage", method: "POST", body: #"{"five_hour_used_percent":100}"#)
            try await Task.sleep(for: .seconds(4))
            let status = try await setup.daemonStatus()
            #expect(status.int("daemon", "switches") == 1)
            #expect(try await setup.chappie(["accounts", "current"]).stdout == "b\n")
            // Every entry: the polls each second would push it out of the default 50.
            let log = try await setup.chappie(["log", "--json", "--limit", "100000"])
            #expect(log.stdout.components(separatedBy: "auto_switched").count - 1 == 1)
            #expect(await setup.stop(daemon) == 0)
        }
    }

    @Test(
        "With the default 10-minute interval, the daemon polls at start, and switches within seconds of another command storing the active account's 100 %"
    )
    func switchesOnOthersReading() async throws {
        let setup = try await setUp([], accounts: ["a", "b"])
        try await whileRunning(setup) {
            #expect(try await setup.chappie(["accounts", "switch", "a"]).status == 0)
            let accounts = try await setup.control("/_emulator/accounts")
            let a = try #require(accounts.string(0, "account_id"))
            let daemon = try setup.startDaemon(["--auto-switch"])
            try await setup.waitForSocket()
            var polled = 0
            for _ in 0..<300 where polled < 2 {
                polled = try await setup.daemonStatus().int("daemon", "polls") ?? 0
                if polled < 2 { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(polled >= 2, "the daemon polls every account when it starts")
            _ = try await setup.control("/_emulator/accounts/\(a)/usage", method: "POST", body: #"{"five_hour_used_percent":100}"#)
            // Not the daemon's poll (its next is 10 minutes away): `usage poll` stores the reading.
            #expect(try await setup.chappie(["usage", "poll", "a"]).status == 0)
            var current = ""
            for _ in 0..<600 where current != "b\n" {
                current = try await setup.chappie(["accounts", "current"]).stdout
                if current != "b\n" { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(current == "b\n", "the daemon took up the reading another command stored")
            #expect(try await setup.daemonStatus().int("daemon", "polls") == polled, "it switched without polling again")
            #expect(await setup.stop(daemon) == 0)
        }
    }

    @Test("Switching by hand to an account at its limit warns with the reset time, and switches all the same")
    func switchToFullAccountWarns() async throws {
        let setup = try await setUp([], accounts: ["a", "b"])
        try await whileRunning(setup) {
            let b = try #require(try await setup.control("/_emulator/accounts").string(1, "account_id"))
            _ = try await setup.control("/_emulator/accounts/\(b)/usage", method: "POST", body: #"{"five_hour_used_percent":100}"#)
            #expect(try await setup.chappie(["usage", "poll", "b"]).status == 0)
            let switched = try await setup.chappie(["accounts", "switch", "b"])
            #expect(switched.status == 0)
            #expect(
                switched.stderr.contains("b is at its limit (5-hour 100 % (binding)") && switched.stderr.contains("resets at"), "\(switched.stderr)")
            #expect(try await setup.chappie(["accounts", "current"]).stdout == "b\n")
            let roomy = try await setup.chappie(["accounts", "switch", "a"])
            #expect(roomy.status == 0 && !roomy.stderr.contains("limit"), "\(roomy.stderr)")
        }
    }

    @Test("A key rotated while the daemon runs: the daemon takes up the new key and seals with it, nothing is lost")
    func keyRotationTakenUp() async throws {
        let setup = try await setUp(["--access-token-ttl", "4"], accounts: ["a"])
        try await whileRunning(setup) {
            let daemon = try setup.startDaemon(["--poll-interval", "1s", "--refresh-margin", "2s"])
            try await setup.waitForSocket()
            #expect(try await setup.chappie(["key", "rotate"]).status == 0)
            let log = setup.home.appendingPathComponent("daemon.log")
            for _ in 0..<300 {
                if (try String(contentsOf: log, encoding: .utf8)).contains("took up the new key") { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(try String(contentsOf: log, encoding: .utf8).contains("took up the new key"))
            #expect(daemon.isRunning)
            // Refreshes after the rotation are sealed with the new key: every credential opens with it.
            let before = try await setup.daemonStatus().int("daemon", "refreshes") ?? 0
            for _ in 0..<300 {
                if (try await setup.daemonStatus().int("daemon", "refreshes") ?? 0) > before { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect((try await setup.daemonStatus().int("daemon", "refreshes") ?? 0) > before)
            #expect(await setup.stop(daemon) == 0)
            let list = JSONDocument(Data(try await setup.chappie(["accounts", "list", "--json"]).stdout.utf8))
            #expect(list.string(0, "credentials") == "ok")
            #expect(try await setup.chappie(["token", "a"]).status == 0)
            #expect(try await setup.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)
        }
    }

    @Test("Two daemons started together on one data directory: one runs, the other exits 1 saying so, and the first's socket answers")
    func oneDaemonPerHome() async throws {
        let setup = try await setUp([], accounts: ["a"])
        try await whileRunning(setup) {
            let daemons = [
                try setup.startDaemon(["--poll-interval", "1h"], log: "daemon-1.log"),
                try setup.startDaemon(["--poll-interval", "1h"], log: "daemon-2.log"),
            ]
            for _ in 0..<600 where daemons.allSatisfy(\.isRunning) { try await Task.sleep(for: .milliseconds(50)) }
            let running = daemons.filter(\.isRunning)
            try #require(running.count == 1, "exactly one daemon must keep running")
            let loser = try #require(daemons.firstIndex { !$0.isRunning })
            await daemons[loser].waitUntilExit()
            #expect(await daemons[loser].terminationStatus == 1)
            let log = try String(contentsOf: setup.home.appendingPathComponent("daemon-\(loser + 1).log"), encoding: .utf8)
            // The data directory's lock, not the old socket probe: the message names the first daemon's pid.
            #expect(log.contains("already running for \(setup.home.path) (pid \(running[0].processIdentifier))"), "\(log)")
            try await setup.waitForSocket()
            #expect(try await setup.daemonStatus().int("daemon", "pid") == Int(running[0].processIdentifier))
            #expect(await setup.stop(running[0]) == 0)
            // The lock died with it: a new daemon starts.
            let next = try setup.startDaemon(["--poll-interval", "1h"], log: "daemon-3.log")
            try await setup.waitForSocket()
            #expect(next.isRunning)
            #expect(await setup.stop(next) == 0)
        }
    }

    @Test(
        "16 idle socket clients held open while tokens come due: every due refresh runs and status answers; past 64 connections the oldest idle ones are closed"
    )
    func idleClientsCannotStall() async throws {
        let setup = try await setUp(["--access-token-ttl", "4"], accounts: ["a", "b"])
        try await whileRunning(setup) {
            // A long request timeout, so that only the connection cap closes idle clients in this test.
            let daemon = try setup.startDaemon(["--refresh-margin", "2s", "--poll-interval", "1h", "--request-timeout", "10m"])
            try await setup.waitForSocket()
            let socket = setup.home.appendingPathComponent("chappie.sock").path
            var idle = try (0..<16).map { _ in try connectIdle(path: socket) }
            defer { idle.forEach { close($0) } }
            let before = try await setup.daemonStatus().int("daemon", "refreshes")
            #expect(before != nil, "status must answer while 16 idle clients are connected")
            // Tokens live 4 s and are due 1–2 s after each refresh: wait for several more to run.
            var refreshes = before ?? 0
            for _ in 0..<600 where refreshes < (before ?? 0) + 4 {
                try await Task.sleep(for: .milliseconds(100))
                refreshes = try await setup.daemonStatus().int("daemon", "refreshes") ?? refreshes
            }
            #expect(refreshes >= (before ?? 0) + 4, "due refreshes did not run while idle clients were connected")
            #expect(idle.filter(closedByServer).isEmpty, "idle clients under the cap must stay connected")
            // 70 more: past the cap of 64, the oldest idle connections make room.
            idle += try (0..<70).map { _ in try connectIdle(path: socket) }
            #expect(try await setup.daemonStatus().int("daemon", "pid") != nil, "status must answer at the connection cap")
            var closed = 0
            for _ in 0..<100 {
                closed = idle.filter(closedByServer).count
                if closed >= idle.count - 64 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(closed >= idle.count - 64)
            #expect(idle.prefix(16).allSatisfy(closedByServer), "the oldest idle clients are the ones closed")
            let token = try await setup.chappie(["token", "a", "--json"])
            #expect(token.status == 0)
            #expect(try await setup.control("/_emulator/stats").int("refresh", "reuse_detected") == 0)
            #expect(await setup.stop(daemon) == 0)
        }
    }

    @Test("A client that sends no request within --request-timeout is closed; others are served meanwhile", .timeLimit(.minutes(10)))
    func silentClientIsClosed() async throws {
        let setup = try await setUp([], accounts: ["a"])
        try await whileRunning(setup) {
            let daemon = try setup.startDaemon(["--poll-interval", "1h", "--request-timeout", "1s"])
            try await setup.waitForSocket()
            // Serving: the daemon answers (the socket's file exists a moment before it listens).
            while !(try await setup.chappie(["status"]).stdout.contains("Daemon: running")) { try await Task.sleep(for: .milliseconds(100)) }
            let silent = try connectIdle(path: setup.home.appendingPathComponent("chappie.sock").path)
            defer { close(silent) }
            #expect(try await setup.chappie(["status"]).stdout.contains("Daemon: running"))
            // Wait for the daemon to end the connection: the read sees the end of the stream.
            var byte: UInt8 = 0
            #expect(read(silent, &byte, 1) == 0)
            #expect(await setup.stop(daemon) == 0)
        }
    }

    @Test("status with something at the socket that never answers: the store's view, and a warning that says so")
    func statusWithASilentSocket() async throws {
        let setup = try await setUp([], accounts: ["a"])
        try await whileRunning(setup) {
            let path = setup.home.appendingPathComponent("chappie.sock").path
            let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(listener) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: Array(path.utf8).prefix(raw.count - 1)) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            #expect(bound == 0 && listen(listener, 8) == 0)
            let status = try await setup.chappie(["status"])
            #expect(status.status == 0)
            #expect(status.stdout.contains("Daemon: not running"), "\(status.stdout)")
            let json = try await setup.chappie(["status", "--json"])
            #expect(JSONDocument(Data(json.stdout.utf8)).string("accounts", 0, "name") == "a", "the store's accounts are shown: \(json.stdout)")
            #expect(status.stderr.contains("gave no answer within 10 s"), "\(status.stderr)")
        }
    }

    @Test("The socket answers status, metrics and usage; malformed requests get an error, not a crash")
    func socketAPI() async throws {
        let setup = try await setUp([], accounts: ["a"])
        try await whileRunning(setup) {
            let daemon = try setup.startDaemon(["--poll-interval", "1h"])
            try await setup.waitForSocket()
            // The one poll at start-up is done before the daemon's and the database's answers are compared.
            for _ in 0..<100 {
                if (try await setup.daemonStatus().int("daemon", "polls") ?? 0) >= 1 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let socket = setup.home.appendingPathComponent("chappie.sock").path
            func raw(_ payload: String) async throws -> String {
                try rawSocketExchange(path: socket, payload: payload)
            }
            for payload in ["not json\n", "{}\n", "[1,2]\n", #"{"command":"reboot"}"# + "\n", String(repeating: "x", count: 70_000), ""] {
                let answer = JSONDocument(Data(try await raw(payload).utf8))
                #expect(answer.bool("ok") == false, "\(payload.prefix(20).debugDescription) → \(answer.root.map { "\($0)" } ?? "no JSON")")
                #expect(answer.string("error")?.isEmpty == false)
            }
            // A well-formed request longer than 64 KiB is refused, however the reads split it.
            let padded = JSONDocument(Data(try await raw(#"{"command":"status""# + String(repeating: " ", count: 100_000) + "}\n").utf8))
            #expect(padded.bool("ok") == false)
            #expect(padded.string("error")?.contains("at most 64 KiB") == true)
            // A request whose sender closes its side without the newline is still the request.
            #expect(JSONDocument(Data(try await raw(#"{"command":"status"}"#).utf8)).bool("ok") == true)
            // Clients that leave before their reply (the reply's write fails with EPIPE, no SIGPIPE).
            for _ in 0..<5 {
                let descriptor = try connectIdle(path: socket)
                _ = Array(#"{"command":"metrics"}"#.utf8 + [0x0A]).withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                close(descriptor)
            }
            let metrics = JSONDocument(Data(try await raw(#"{"command":"metrics"}"# + "\n").utf8)).string("metrics") ?? ""
            #expect(metrics.contains("# TYPE chappie_refreshes_total counter"))
            #expect(metrics.contains(#"chappie_account_token_seconds_to_expiry{account="a"}"#))
            #expect(!metrics.contains("eyJ"))
            // The daemon still works after all that.
            #expect(try await setup.chappie(["status"]).stdout.contains("Daemon: running"))
            let cached = try await setup.chappie(["usage", "--cached", "--json"])
            #expect(cached.status == 0)
            #expect(await setup.stop(daemon) == 0)
            let after = try await setup.chappie(["usage", "--cached", "--json"])
            #expect(after.stdout == cached.stdout, "the daemon and the database gave different output")
            #expect(try await setup.chappie(["status"]).stdout.contains("Daemon: not running"))
        }
    }
}

extension ChappieTestbed {
    /// Starts `chappie daemon` with the arguments; its output goes to `daemon.log` in the home.
    func startDaemon(_ arguments: [String], log name: String = "daemon.log") throws -> ChildProcess {
        let log = home.appendingPathComponent(name)
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        // The test process holds the daemon's standard input: a crashed test leaves no daemon behind.
        return try ChildProcess(
            try BuiltProducts.executable("chappie"), ["daemon", "--log-format", "json", "--stop-when-stdin-closes"] + arguments + service,
            stdin: .lifeline, stdout: .descriptor(handle.fileDescriptor), stderr: .descriptor(handle.fileDescriptor))
    }

    func daemonStatus() async throws -> JSONDocument {
        JSONDocument(Data(try await chappie(["status", "--json"]).stdout.utf8))
    }

    func waitForSocket(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let socket = home.appendingPathComponent("chappie.sock").path
        for _ in 0..<600 where !FileManager.default.fileExists(atPath: socket) {
            try await Task.sleep(for: .milliseconds(50))
        }
        try #require(FileManager.default.fileExists(atPath: socket), "the daemon's socket did not appear within 30 s", sourceLocation: sourceLocation)
    }

    /// The daemon's log so far.
    func log(_ name: String) -> String {
        (try? String(contentsOf: home.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    /// Waits (up to 30 s) until the daemon's log has a line with the text.
    func waitForLog(_ name: String, containing text: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for _ in 0..<600 where !log(name).contains(text) {
            try await Task.sleep(for: .milliseconds(50))
        }
        try #require(log(name).contains(text), "\(name) has no \"\(text)\" after 30 s: \(log(name).suffix(1500))", sourceLocation: sourceLocation)
    }

    func stop(_ daemon: ChildProcess) async -> Int32 {
        if daemon.isRunning { daemon.terminate() }
        for _ in 0..<1200 where daemon.isRunning { try? await Task.sleep(for: .milliseconds(25)) }
        if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) }
        await daemon.waitUntilExit()
        return await daemon.terminationStatus
    }
}

/// Connects to a Unix socket and sends nothing: an idle client.
private func connectIdle(path: String) throws -> Int32 {
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: Array(path.utf8).prefix(raw.count - 1))
    }
    let connected = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard connected == 0 else {
        close(descriptor)
        throw EmulatorHarnessError(message: "cannot connect to \(path)")
    }
    return descriptor
}

/// Whether the daemon closed this client's connection (it reads as the end of the stream).
private func closedByServer(_ descriptor: Int32) -> Bool {
    var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    return poll(&entry, 1, 0) > 0
}

/// Sends raw bytes to a Unix socket, closes the sending side, and reads everything back.
func rawSocketExchange(path: String, payload: String) throws -> String {
    let descriptor = try connectIdle(path: path)
    defer { close(descriptor) }
    let bytes = Array(payload.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written <= 0 { break }
        offset += written
    }
    shutdown(descriptor, Int32(SHUT_WR))
    var answer = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(descriptor, &buffer, buffer.count)
        if count <= 0 { break }
        answer += buffer[0..<count]
    }
    return String(decoding: answer, as: UTF8.self)
}

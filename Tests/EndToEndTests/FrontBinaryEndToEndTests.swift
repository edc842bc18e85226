import ChappieTestSupport
import Foundation
import GRDB
import Testing

/// The front binary (`chappie`) against the full one (`chappie-full`), run as a user runs them.
///
/// A copy of the front binary alone in a directory cannot hand a line on: it exits 78 saying the
/// full binary is missing. So whether a line was answered by the front binary itself is seen from
/// outside, and what it answered is compared byte for byte with the full binary's answer.
@Suite("The front binary answers --version and stored tokens itself, byte for byte as the full binary, and hands on every other line", .tags(.slow))
struct FrontBinaryEndToEndTests {
    /// A testbed with two accounts (work, active; home) and the front binary copied alone.
    struct Setup: TestFixture {
        let testbed: ChappieTestbed
        let lone: URL

        static func start() async throws -> Setup {
            let testbed = try await ChappieTestbed.start()
            for name in ["work", "home"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            let lone = try TestTokens.temporaryDirectory("chappie-lone-front").appendingPathComponent("chappie")
            try FileManager.default.copyItem(at: try BuiltProducts.executable("chappie"), to: lone)
            return Setup(testbed: testbed, lone: lone)
        }

        func stop() async {
            await testbed.stop()
            try? FileManager.default.removeItem(at: lone.deletingLastPathComponent())
        }

        /// The variables every run gets: the testbed's `HOME`, nothing of the tester's.
        var environment: [String: String?] {
            var environment: [String: String?] = ["HOME": testbed.userHome.path]
            for name in [
                "CHAPPIE_HOME", "CHAPPIE_ACCOUNT", "CHAPPIE_KEY_FILE", "CHAPPIE_PASSPHRASE", "CHAPPIE_STORE_URL", "CHAPPIE_CHECK_ONLY", "CODEX_HOME",
            ] {
                environment[name] = .some(nil)
            }
            return environment
        }

        /// The lone front binary, in the data directory.
        func front(_ arguments: [String], _ extra: [String: String?] = [:]) async throws -> ProcessResult {
            try await runProcess(lone, arguments, environment: environment.merging(extra) { $1 }, directory: testbed.home)
        }

        /// The full binary with the same line.
        func full(_ arguments: [String], _ extra: [String: String?] = [:]) async throws -> ProcessResult {
            try await runProcess(
                try BuiltProducts.executable("chappie-full"), arguments, environment: environment.merging(extra) { $1 }, directory: testbed.home)
        }

        /// The front binary as installed (`bin/chappie` with `libexec/chappie/chappie-full`).
        func installed(_ arguments: [String], _ extra: [String: String?] = [:], directory: URL? = nil) async throws -> ProcessResult {
            try await runProcess(
                try BuiltProducts.executable("chappie"), arguments, environment: environment.merging(extra) { $1 },
                directory: directory ?? testbed.home)
        }

        var home: [String] { ["--home", testbed.home.path] }

        func redemptions() async throws -> Int {
            try await testbed.control("/_emulator/stats").int("refresh", "redemptions") ?? 0
        }
    }

    @Test(
        "--version and token (named, active, --json, --margin, options before the command) are answered alone, as the full binary answers, and the store is not written"
    )
    func served() async throws {
        let setup = try await Setup.start()
        try await whileRunning(setup) {
            let store = setup.testbed.home.appendingPathComponent("chappie.sqlite").path
            let modified = try FileManager.default.attributesOfItem(atPath: store)[.modificationDate] as? Date
            let before = try await setup.redemptions()
            let lines = [
                ["--version"], ["token", "work"] + setup.home, ["token"] + setup.home, ["token", "--json", "home"] + setup.home,
                setup.home + ["--json", "token"], ["token", "work", "--margin", "30m"] + setup.home, ["accounts", "current"] + setup.home,
                setup.home + ["accounts", "current"],
            ]
            var answers: [ProcessResult] = []
            for line in lines { answers.append(try await setup.front(line)) }
            #expect(try await setup.front(["token", "work"], ["CHAPPIE_HOME": setup.testbed.home.path]).status == 0)
            // Read-only: the database file is as it was (the full binary's open writes it).
            #expect(try FileManager.default.attributesOfItem(atPath: store)[.modificationDate] as? Date == modified)
            for (line, front) in zip(lines, answers) {
                let full = try await setup.full(line)
                #expect(front.status == 0, "\(line): \(front.stderr)")
                #expect(front.stdout == full.stdout && front.stderr == full.stderr && front.status == full.status, "\(line)")
            }
            #expect(try await setup.redemptions() == before)
        }
    }

    @Test("Lines it does not answer alone go to the full binary: alone it says what to reinstall (78); installed, the answer is the full binary's")
    func handedOn() async throws {
        let setup = try await Setup.start()
        try await whileRunning(setup) {
            let lines: [([String], [String: String?])] = [
                (["token", "work", "--margin", "2h"] + setup.home, [:]), (["token", "nope"] + setup.home, [:]),
                (["accounts", "list", "--json"] + setup.home, [:]),
                (["token", "work", "--verbose"] + setup.home, [:]), (["--help"], [:]), (["tokn"], [:]),
                (["token", "work"] + setup.home, ["CHAPPIE_STORE_URL": "postgres://nobody@127.0.0.1:1/none"]),
                (["token", "work"] + setup.home, ["CHAPPIE_PASSPHRASE": "x"]), (["token"] + setup.home, ["CHAPPIE_ACCOUNT": "home"]),
            ]
            for (line, environment) in lines {
                let alone = try await setup.front(line, environment)
                #expect(alone.status == 78, "\(line): \(alone.stderr)")
                #expect(alone.stderr.contains("chappie-full") && alone.stderr.contains("Reinstall chappie: sudo dpkg -i"), "\(alone.stderr)")
                #expect(alone.stdout.isEmpty)
                // The refresh above changes the token: compare what does not change.
                let installed = try await setup.installed(line, environment)
                let full = try await setup.full(line, environment)
                #expect(installed.status == full.status, "\(line): \(installed.stderr) / \(full.stderr)")
                if line.contains("--margin") || line.contains("--verbose") { continue }
                #expect(installed.stdout == full.stdout && installed.stderr == full.stderr, "\(line)")
            }
        }
    }

    @Test("What the full binary would do more than read goes to it: a loose key file, tokens waiting in recovery, a Codex login with other tokens")
    func storeStates() async throws {
        let setup = try await Setup.start()
        try await whileRunning(setup) {
            let line = ["token", "work"] + setup.home
            #expect(try await setup.front(line).status == 0)
            let key = setup.testbed.home.appendingPathComponent("chappie.key").path
            chmod(key, 0o644)
            #expect(try await setup.front(line).status == 78)
            chmod(key, 0o600)

            let recovery = setup.testbed.home.appendingPathComponent("recovery")
            try FileManager.default.createDirectory(at: recovery, withIntermediateDirectories: true)
            let pending = recovery.appendingPathComponent("account-1.sealed")
            try Data("x".utf8).write(to: pending)
            #expect(try await setup.front(line).status == 78)
            try FileManager.default.removeItem(at: pending)
            #expect(try await setup.front(line).status == 0)

            // Bound to a Codex home: the same tokens there are a read; other tokens, the full binary's.
            let codex = setup.testbed.home.appendingPathComponent("codex")
            #expect(try await setup.installed(["accounts", "switch", "work", "--codex-home", codex.path] + setup.home).status == 0)
            #expect(try await setup.front(line).status == 0)
            let auth = codex.appendingPathComponent("auth.json")
            let text = try String(contentsOf: auth, encoding: .utf8)
            let login = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            var tokens = try #require(login["tokens"] as? [String: Any])
            tokens["refresh_token"] = "another"
            var changed = login
            changed["tokens"] = tokens
            try JSONSerialization.data(withJSONObject: changed).write(to: auth)
            #expect(try await setup.front(line).status == 78)
            try Data(text.utf8).write(to: auth)
            #expect(try await setup.front(line).status == 0)
        }
    }

    @Test("With the daemon running, token is asked of it over the socket: answered alone even when the store could not be read alone")
    func throughTheDaemon() async throws {
        let setup = try await Setup.start()
        try await whileRunning(setup) {
            let daemon = try setup.testbed.startDaemon([])
            try await setup.testbed.waitForSocket()
            // The key file too open for the front binary's own read: only the daemon can answer alone.
            let key = setup.testbed.home.appendingPathComponent("chappie.key").path
            chmod(key, 0o644)
            for line in [["token", "work"] + setup.home, ["token", "--json"] + setup.home] {
                let front = try await setup.front(line)
                #expect(front.status == 0, "\(front.stderr)")
                let full = try await setup.full(line)
                #expect(front.stdout == full.stdout && front.stderr == full.stderr, "\(line)")
            }
            // A refusal is printed as the full binary prints it.
            let refused = try await setup.front(["token", "nope"] + setup.home)
            let fullRefused = try await setup.full(["token", "nope"] + setup.home)
            #expect(refused.status == fullRefused.status && refused.stderr == fullRefused.stderr && refused.status != 0, "\(refused.stderr)")
            chmod(key, 0o600)
            daemon.terminate()
            await daemon.waitUntilExit()
        }
    }

    @Test("With the daemon running, prompt is answered alone from its readings, as the full binary writes the line, in any time zone")
    func promptThroughTheDaemon() async throws {
        let setup = try await Setup.start()
        try await whileRunning(setup) {
            let listed = JSONDocument(Data(try await setup.installed(["accounts", "list", "--json"] + setup.home).stdout.utf8))
            let index = try #require((0..<(listed.array()?.count ?? 0)).first { listed.string($0, "name") == "work" })
            let id = try #require(listed.string(index, "chatgptAccountID"))
            #expect(try await setup.installed(["accounts", "set", "work", "--reserve", "80"] + setup.home).status == 0)
            let formats = [[], ["--format", "{plan} {left}% {window} {used}"], ["--format=\u{3000}{account} ↻{reset}\t"], ["--format", "x"]]
            // No daemon: the store is the full binary's to read.
            #expect(try await setup.front(["prompt"] + setup.home).status == 78)
            let daemon = try setup.testbed.startDaemon([])
            try await setup.testbed.waitForSocket()
            // The 5-hour window binding (its reset within the day), then the weekly one (days away: its day is named).
            for usage in [#"{"five_hour_used_percent":42.4,"weekly_used_percent":20}"#, #"{"five_hour_used_percent":10,"weekly_used_percent":90.5}"#]
            {
                _ = try await setup.testbed.control("/_emulator/accounts/\(id)/usage", method: "POST", body: usage)
                #expect(try await setup.installed(["usage", "poll", "--all"] + setup.testbed.service).status == 0)
                for zone in ["UTC", "Asia/Kolkata", "America/St_Johns"] {
                    for format in formats {
                        let line = ["prompt"] + format + setup.home
                        // The daemon has 0.5 s to answer, as for the full binary: on a busy machine a
                        // run may be handed on (78 for the lone copy); one of a few tries is answered alone.
                        var front = try await setup.front(line, ["TZ": zone])
                        for _ in 0..<5 where front.status == 78 { front = try await setup.front(line, ["TZ": zone]) }
                        let full = try await setup.full(line, ["TZ": zone])
                        #expect(front.status == 0 && front.stderr.isEmpty, "\(line): \(front.stderr)")
                        #expect(front.stdout == full.stdout && front.stderr == full.stderr, "\(zone) \(line)\n\(front.stdout)\(full.stdout)")
                        #expect(!front.stdout.isEmpty)
                    }
                }
            }
            // A zone Foundation names otherwise than the C library (an abbreviation, a POSIX rule, a
            // path, TZFILE): a line with a reset time is handed on; one without is answered alone.
            for zone: [String: String?] in [["TZ": "EST"], ["TZ": "JST-9"], ["TZ": ":Europe/Paris"], ["TZ": ""], ["TZFILE": "/etc/localtime"]] {
                #expect(try await setup.front(["prompt"] + setup.home, zone).status == 78, "\(zone)")
                let installed = try await setup.installed(["prompt"] + setup.home, zone)
                let full = try await setup.full(["prompt"] + setup.home, zone)
                #expect(installed.stdout == full.stdout && installed.status == full.status, "\(zone)")
                var alone = try await setup.front(["prompt", "--format", "{account} {used}"] + setup.home, zone)
                for _ in 0..<5 where alone.status == 78 {
                    alone = try await setup.front(["prompt", "--format", "{account} {used}"] + setup.home, zone)
                }
                #expect(alone.status == 0 && alone.stdout.hasPrefix("work "), "\(zone): \(alone.stdout)\(alone.stderr)")
            }
            // A zone Foundation knows but the system has no file for: Foundation would stop the full
            // binary at TimeZone.current; it reads it as UTC, as the C library does.
            let odd = try await setup.full(["prompt"] + setup.home, ["TZ": "ACT"])
            let utc = try await setup.full(["prompt"] + setup.home, ["TZ": "UTC"])
            #expect(odd.status == 0 && odd.stdout == utc.stdout && odd.stderr == utc.stderr, "\(odd.stderr.prefix(300))")
            #expect(try await setup.installed(["prompt"] + setup.home, ["TZ": "ACT"]).stdout == utc.stdout)
            // (accounts list's relative times may move on between two runs: its exit and silence suffice.)
            let list = try await setup.full(["accounts", "list"] + setup.home, ["TZ": "ACT"])
            #expect(list.status == 0 && list.stderr.isEmpty, "\(list.stderr.prefix(300))")
            // An abbreviation Foundation reads through its table is left to it; the programs chappie
            // starts get TZ as it was.
            let pacific = try await setup.full(["prompt"] + setup.home, ["TZ": "PST"])
            let angeles = try await setup.full(["prompt"] + setup.home, ["TZ": "America/Los_Angeles"])
            #expect(pacific.status == 0 && pacific.stdout == angeles.stdout, "\(pacific.stdout) \(angeles.stdout) \(pacific.stderr.prefix(300))")
            let job = try await setup.full(["exec", "work"] + setup.home + ["--", "sh", "-c", "echo \"$TZ\""], ["TZ": "ACT"])
            #expect(job.stdout == "ACT\n", "\(job.stdout)\(job.stderr)")
            // The account a directory binds or $CHAPPIE_ACCOUNT names, and a format the full binary refuses, are handed on.
            #expect(try await setup.front(["prompt"] + setup.home, ["CHAPPIE_ACCOUNT": "home"]).status == 78)
            #expect(try await setup.front(["prompt", "--format", "{acount}"] + setup.home).status == 78)
            let project = setup.testbed.home.appendingPathComponent("bound")
            try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
            #expect(try await setup.installed(["bind", "home"] + setup.home, directory: project).status == 0)
            #expect(try await runProcess(setup.lone, ["prompt"] + setup.home, environment: setup.environment, directory: project).status == 78)
            let current = try await runProcess(setup.lone, ["accounts", "current"] + setup.home, environment: setup.environment, directory: project)
            #expect(current.status == 78, "a binding is the full binary's to read: \(current.stdout)")
            let bound = try await setup.installed(["prompt"] + setup.home, directory: project)
            #expect(bound.stdout.hasPrefix("home "), "\(bound.stdout)")
            daemon.terminate()
            await daemon.waitUntilExit()
        }
    }

    @Test("Started with its standard descriptors closed, each binary answers as it does with them open (none is taken by a file it opens)")
    func closedDescriptors() async throws {
        let setup = try await Setup.start()
        try await whileRunning(setup) {
            for program in [setup.lone.path, try BuiltProducts.executable("chappie-full").path] {
                for closing in [">&- 2>&-", "<&- 2>&-", "<&- >&-"] {
                    // The redirections close them for the command alone; the shell then says how it ended.
                    let run = try await runProcess(
                        URL(fileURLWithPath: "/bin/sh"),
                        ["-c", "\"$0\" accounts current --home \"$1\" \(closing); echo \"exit $?\"", program, setup.testbed.home.path],
                        environment: setup.environment)
                    // What stays open gets exactly its line; nothing printed went into another file.
                    let expected = closing == "<&- 2>&-" ? "work\nexit 0\n" : "exit 0\n"
                    #expect(run.stdout == expected, "\(program) \(closing): \(run.stdout)\(run.stderr)")
                    #expect(run.stderr == (closing == "<&- >&-" ? "work, the active account\n" : ""), "\(program) \(closing): \(run.stderr)")
                }
            }
        }
    }

    @Test("accounts list is answered alone, as the full binary draws it: readings, a reserve, a full account, a private Codex home, narrow terminals")
    func accountsList() async throws {
        let setup = try await Setup.start()
        try await whileRunning(setup) {
            let exec = try await setup.installed(["exec", "home"] + setup.testbed.service + ["--", "true"])
            #expect(exec.status == 0, "\(exec.stderr)")
            let listed = JSONDocument(Data(try await setup.installed(["accounts", "list", "--json"] + setup.home).stdout.utf8))
            for (name, usage) in [
                ("home", #"{"five_hour_used_percent":100}"#), ("work", #"{"five_hour_used_percent":72.345,"weekly_used_percent":30}"#),
            ] {
                let index = try #require((0..<(listed.array()?.count ?? 0)).first { listed.string($0, "name") == name })
                let id = try #require(listed.string(index, "chatgptAccountID"))
                _ = try await setup.testbed.control("/_emulator/accounts/\(id)/usage", method: "POST", body: usage)
            }
            #expect(try await setup.installed(["usage", "poll", "--all"] + setup.testbed.service).status == 0)
            #expect(try await setup.installed(["accounts", "set", "work", "--reserve", "50"] + setup.home).status == 0)
            for environment: [String: String?] in [[:], ["COLUMNS": "60"], ["COLUMNS": "200"], ["COLUMNS": "40", "NO_COLOR": "1"]] {
                let line = ["accounts", "list"] + setup.home
                // Line by line, byte for byte with the full binary's run before or after it: an
                // account's relative time ("in 59 min") may move on once between the runs, never twice.
                let before = try await setup.full(line, environment)
                let front = try await setup.front(line, environment)
                let after = try await setup.full(line, environment)
                #expect(front.status == 0, "\(environment): \(front.stderr)")
                let (lines, earlier, later) = (
                    front.stdout.split(separator: "\n"), before.stdout.split(separator: "\n"), after.stdout.split(separator: "\n")
                )
                #expect(lines.count == later.count && front.stderr == after.stderr, "\(environment)\n\(front.stdout)\n\(after.stdout)")
                for (index, line) in lines.enumerated() where index < min(earlier.count, later.count) {
                    #expect(line == earlier[index] || line == later[index], "\(environment)\n\(front.stdout)\n\(before.stdout)\n\(after.stdout)")
                }
            }
            #expect(try await setup.front(["accounts", "list", "--json"] + setup.home).status == 78)
            #expect(try await setup.front(setup.home + ["accounts", "list"]).status == 0)
        }
    }

    @Test("A store the full binary would do something with first is its to read", arguments: StoreState.allCases)
    func storeState(_ state: StoreState) async throws {
        let setup = try await Setup.start()
        try await whileRunning(setup) {
            let lines = [["token", "work"] + setup.home, ["accounts", "list"] + setup.home, ["accounts", "current"] + setup.home]
            for line in lines { #expect(try await setup.front(line).status == 0, "\(line) before \(state)") }
            let holder = try await state.apply(to: setup.testbed.home)
            for line in lines {
                let alone = try await setup.front(line)
                // accounts current reads no credentials: where the full binary names the account all
                // the same (credentials that do not open), answering alone is answering as it does.
                if line.starts(with: ["accounts", "current"]), state == .credentialsDoNotOpen {
                    let full = try await setup.full(line)
                    #expect(alone.stdout == full.stdout && alone.stderr == full.stderr && alone.status == full.status, "\(state): \(line)")
                    continue
                }
                #expect(alone.status == 78, "\(state): \(line) was answered alone: \(alone.stdout)")
            }
            if let holder {
                kill(holder.processIdentifier, SIGKILL)
                await holder.waitUntilExit()
            }
        }
    }

    /// States of a data directory in which the front binary hands both `token` and `accounts list` on.
    enum StoreState: String, CaseIterable, CustomTestStringConvertible {
        case noDatabase, looseDirectory, linkedWAL, storeURLFile, unknownMigration, passphraseStore, rotationInProgress, pendingKeyFile
        case rowBoundCredentials, keyLockHeld, movingToPool, credentialsDoNotOpen, staleTemporary, tokensInRecovery, sideFileNotAFile

        var testDescription: String { rawValue }

        /// Puts the data directory in this state; returns the process that holds it so (a lock), if any.
        func apply(to home: URL) async throws -> ChildProcess? {
            let database = home.appendingPathComponent("chappie.sqlite")
            func sql(_ statement: String) throws {
                let queue = try DatabaseQueue(path: database.path)
                try queue.write { try $0.execute(sql: statement) }
            }
            switch self {
            case .noDatabase: try FileManager.default.removeItem(at: database)
            case .looseDirectory: chmod(home.path, 0o755)
            case .linkedWAL:
                try? FileManager.default.removeItem(at: home.appendingPathComponent("chappie.sqlite-wal"))
                try FileManager.default.createSymbolicLink(
                    atPath: home.appendingPathComponent("chappie.sqlite-wal").path, withDestinationPath: "/tmp/elsewhere")
            case .storeURLFile:
                try Data("postgres://nobody@127.0.0.1:1/none\n".utf8).write(to: home.appendingPathComponent("store-url"))
                chmod(home.appendingPathComponent("store-url").path, 0o600)
            case .unknownMigration: try sql("INSERT INTO grdb_migrations VALUES ('0005z_unknown')")
            case .passphraseStore: try sql("INSERT INTO settings VALUES ('passphrase_kdf', X'7B7D')")
            case .rotationInProgress: try sql("INSERT INTO settings VALUES ('pending_key_id', X'3030')")
            case .pendingKeyFile: try Data("x".utf8).write(to: home.appendingPathComponent("chappie.key.new"))
            case .rowBoundCredentials: try sql("INSERT INTO settings VALUES ('row_bound_credentials', X'31')")
            case .keyLockHeld:
                // Held exclusive by another process (as a rotation holds it) until the test ends it.
                let lock = home.appendingPathComponent("locks/key.lock").path
                let holder = try ChildProcess(
                    URL(fileURLWithPath: "/usr/bin/python3"),
                    ["-c", "import fcntl, sys, time\nf = open(sys.argv[1], 'r+')\nfcntl.flock(f, fcntl.LOCK_EX)\ntime.sleep(600)", lock],
                    stdin: .lifeline)
                while try await runProcess(URL(fileURLWithPath: "/usr/bin/flock"), ["-n", "-s", lock, "true"]).status == 0 {
                    try await Task.sleep(for: .milliseconds(50))
                }
                return holder
            case .movingToPool:
                try sql("INSERT INTO pool_moves (account_id, started_at) SELECT id, '2026-11-26 00:00:00.000' FROM accounts WHERE name = 'work'")
            case .credentialsDoNotOpen: try sql("UPDATE sealed_credentials SET nonce = zeroblob(24)")
            case .sideFileNotAFile:
                let shm = home.appendingPathComponent("chappie.sqlite-shm")
                try? FileManager.default.removeItem(at: shm)
                try FileManager.default.createDirectory(at: shm, withIntermediateDirectories: false)
            case .staleTemporary: try Data("x".utf8).write(to: home.appendingPathComponent(".chappie.key.99999999.1.tmp"))
            case .tokensInRecovery:
                let recovery = home.appendingPathComponent("recovery")
                try FileManager.default.createDirectory(at: recovery, withIntermediateDirectories: true)
                try Data([1]).write(to: recovery.appendingPathComponent("account-1.slot"))
            }
            return nil
        }
    }

    @Test("The front binary links SQLite, libsodium and the C and Swift runtimes only: no Foundation, NIO, TLS, PostgreSQL client or GRDB")
    func lean() async throws {
        let front = try BuiltProducts.executable("chappie").path
        let needed = try await runProcess(URL(fileURLWithPath: "/usr/bin/readelf"), ["-d", front])
        #expect(needed.status == 0)
        let libraries = needed.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line in
            line.split(separator: "[").last.map { String($0.dropLast()) }
        }
        let allowed = ["libsodium.so", "libsqlite3.so", "libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "ld-linux", "libswift"]
        for library in libraries {
            #expect(allowed.contains { library.hasPrefix($0) }, "\(library) is linked")
            #expect(!library.contains("Foundation") && !library.contains("libcurl") && !library.contains("libssl"), "\(library)")
        }
        // The symbol table names the Swift modules linked in: none of the heavy ones.
        let symbols = try await runProcess(URL(fileURLWithPath: "/usr/bin/nm"), ["--defined-only", front], timeout: .seconds(120))
        #expect(symbols.status == 0)
        for module in ["7NIOCore", "6NIOSSL", "11PostgresNIO", "4GRDB", "14ArgumentParser", "20FoundationEssentials", "10Foundation", "9WSCore"] {
            #expect(!symbols.stdout.contains("$s\(module)"), "the front binary links \(module.drop { $0.isNumber })")
        }
        #expect(symbols.stdout.contains("$s12ChappieFront"))
    }
}

import ChappieTestSupport
import Foundation
import Testing

/// What users of gh and kubectl type first (issue 41, "Habits from gh and kubectl").
@Suite("Aliases, pointers, -o json, global options anywhere, the switch picker and config list", .tags(.slow))
struct HabitsEndToEndTests {
    @Test("accounts ls and use; chappie switch and login point to the real commands; a refusal names the command it refused")
    func aliasesAndPointers() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["work", "home"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            #expect(
                try await testbed.chappie(["accounts", "ls", "--json"]).stdout == (try await testbed.chappie(["accounts", "list", "--json"])).stdout)
            let used = try await testbed.chappie(["accounts", "use", "home", "--no-codex-home"])
            #expect(used.status == 0 && used.stdout.contains("Active account: home"), "\(used.stderr)")

            for (line, meant) in [(["switch", "work"], "accounts switch"), (["login"], "accounts add"), (["logout"], "accounts remove")] {
                let result = try await testbed.chappie(line)
                #expect(result.status == 2, "\(line)")
                #expect(result.stderr == "error: unknown command '\(line[0])' for 'chappie'. Did you mean '\(meant)'?\n", "\(result.stderr)")
            }
            let unknown = try await testbed.chappie(["accounts", "frob", "x"])
            #expect(unknown.status == 2 && unknown.stderr.contains("unknown command 'frob' for 'chappie accounts'"), "\(unknown.stderr)")
            // Off a terminal, use with no name is refused, naming itself (not accounts list).
            let nameless = try await testbed.chappie(["accounts", "use"])
            #expect(nameless.status == 2 && nameless.stderr.contains("Usage: chappie accounts switch"), "\(nameless.stderr)")
            #expect(!nameless.stderr.contains("accounts list"))
            // `usage NAME` is still an account.
            #expect(try await testbed.chappie(["usage", "work", "--cached"]).status == 0)
        }
    }

    @Test("-o json is --json and -o table the table, on every command; global options anywhere before a --")
    func outputAndGlobalOptions() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            for line in [["accounts", "list"], ["accounts", "show", "work"], ["config", "list"], ["log", "--limit", "3"], ["status"]] {
                let json = try await testbed.chappie(line + ["--json"])
                let short = try await testbed.chappie(line + ["-o", "json"])
                #expect(json.status == 0 && short.stdout == json.stdout, "\(line): \(short.stderr)")
                // The table again (its relative times may move on between two runs: only its first line).
                let table = try await testbed.chappie(line)
                let first = { (text: String) in text.split(separator: "\n").first.map(String.init) }
                #expect(first(try await testbed.chappie(line + ["-o", "table"]).stdout) == first(table.stdout), "\(line)")
            }
            #expect(try await testbed.chappie(["accounts", "list", "--json", "-o", "table"]).status == 2)
            #expect(try await testbed.chappie(["accounts", "list", "-o", "yaml"]).status == 2)
            // An empty list is [].
            #expect(try await testbed.chappie(["log", "--kind", "removed", "--json"]).stdout == "[]\n")

            // --home between a command and its subcommand, as after it.
            let chappie = try BuiltProducts.executable("chappie")
            let service = ["--issuer", testbed.emulator.issuer, "--backend", testbed.emulator.backend]
            let environment: [String: String?] = ["HOME": testbed.userHome.path, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil]
            #expect(try await testbed.chappie(["config", "set", "codex-home", "/tmp/codex-of-work"]).status == 0)
            for line in [
                ["config", "--home", testbed.home.path, "get", "codex-home"], ["--home", testbed.home.path, "config", "get", "codex-home"],
                ["config", "get", "--home", testbed.home.path, "codex-home"],
            ] {
                let result = try await runProcess(chappie, line + service, environment: environment)
                #expect(result.status == 0 && result.stdout == "/tmp/codex-of-work\n", "\(line): \(result.stderr)")
            }
            let listed = try await runProcess(
                chappie, ["accounts", "--home", testbed.home.path, "-o", "json", "list"] + service, environment: environment)
            #expect(listed.status == 0 && listed.stdout.hasPrefix("["), "\(listed.stderr)")
        }
    }

    @Test("accounts switch with no name on a terminal lists the accounts and asks; config list shows each setting's source")
    func pickerAndConfigList() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["work", "home"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            let picked = try await runOnTerminal(
                try BuiltProducts.executable("chappie"), ["accounts", "switch", "--no-codex-home"] + testbed.service,
                answers: [("Switch to (1-2 or a name; empty to cancel): ", "1\n")],
                environment: ["HOME": testbed.userHome.path, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil])
            #expect(picked.status == 0, "\(picked.stdout)")
            #expect(picked.stdout.contains("NAME") && picked.stdout.contains("home") && picked.stdout.contains("work"), "\(picked.stdout)")
            // Listed by name: 1 is home.
            #expect(picked.stdout.contains("Active account: home"), "\(picked.stdout)")
            let cancelled = try await runOnTerminal(
                try BuiltProducts.executable("chappie"), ["accounts", "switch", "--no-codex-home"] + testbed.service,
                answers: [("empty to cancel): ", "nobody\n"), ("empty to cancel): ", "\n")],
                environment: ["HOME": testbed.userHome.path, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil])
            #expect(cancelled.status == 1 && cancelled.stdout.contains("nobody is not one of them") && cancelled.stdout.contains("nothing switched"))

            #expect(try await testbed.chappie(["config", "set", "usage-retention", "90d"]).status == 0)
            #expect(try await testbed.chappie(["config", "set", "alert-at", "50,90"]).status == 0)
            let listed = try await testbed.chappie(["config", "list", "--json"], environment: ["CODEX_HOME": "/tmp/codex-from-env"])
            let entries = JSONDocument(Data(listed.stdout.utf8)).array() as? [[String: Any]] ?? []
            func entry(_ name: String) -> (String?, String?) {
                let found = entries.first { $0["setting"] as? String == name }
                return (found?["value"] as? String, found?["source"] as? String)
            }
            #expect(entries.count == 7, "\(listed.stdout)")
            #expect(entry("usage-retention") == ("90d", "store"))
            #expect(entry("alert-at") == ("50,90", "this machine"))
            #expect(entry("originator") == ("chappie", "default"))
            #expect(entry("codex-home") == ("/tmp/codex-from-env", "$CODEX_HOME (accounts switch stores it)"))
            #expect(entry("alert-webhook") == (nil, "unset"))
        }
    }

    @Test("--home ~ is refused and its mode kept; reading commands create no store; a directory made private says so")
    func homeIsNoStore() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let chappie = try BuiltProducts.executable("chappie")
            let service = ["--issuer", testbed.emulator.issuer, "--backend", testbed.emulator.backend]
            let environment: [String: String?] = ["HOME": testbed.userHome.path, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil]
            // A user's home: files of theirs, mode 755.
            try FileManager.default.createDirectory(at: testbed.userHome, withIntermediateDirectories: true)
            try Data("alias ll='ls -l'\n".utf8).write(to: testbed.userHome.appendingPathComponent(".bashrc"))
            chmod(testbed.userHome.path, 0o755)
            for line in [["config", "get", "codex-home"], ["accounts", "add", "work"], ["usage"]] {
                // As a shell gives `--home ~`.
                let refused = try await runProcess(chappie, line + ["--home", testbed.userHome.path] + service, environment: environment)
                #expect(refused.status == 78, "\(line): \(refused.stderr)")
                #expect(
                    refused.stderr.contains("\(testbed.userHome.path) is not a chappie data directory: it holds other files (.bashrc)")
                        && refused.stderr.contains("Did you mean --home ~/.local/share/chappie?"), "\(refused.stderr)")
            }
            var info = stat()
            stat(testbed.userHome.path, &info)
            #expect(info.st_mode & 0o777 == 0o755)
            #expect(!FileManager.default.fileExists(atPath: testbed.userHome.appendingPathComponent("chappie.sqlite").path))

            // Reading commands on a directory that does not exist yet create nothing.
            let fresh = testbed.home.appendingPathComponent("fresh")
            for line in [["accounts", "list"], ["accounts", "list", "--json"], ["log"], ["config", "get", "codex-home"], ["config", "list"]] {
                let result = try await runProcess(chappie, line + ["--home", fresh.path] + service, environment: environment)
                #expect(result.status == 0, "\(line): \(result.stderr)")
            }
            #expect(!FileManager.default.fileExists(atPath: fresh.path))

            // An empty directory of mode 755 becomes the store, and chappie says it narrowed it.
            let open = testbed.home.appendingPathComponent("open")
            try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
            chmod(open.path, 0o755)
            let added = try await runProcess(chappie, ["accounts", "add", "work", "--home", open.path] + service, environment: environment)
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.stderr.contains("made \(open.path) private: its mode was 755, now 700"), "\(added.stderr)")
        }
    }

    @Test("A person's sentence first, the issuer's words with --verbose and --json; every account failing alike is one line")
    func messages() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["work", "home"] {
                #expect(try await testbed.chappie(["accounts", "add", name]).status == 0)
                let codex = testbed.home.appendingPathComponent("codex-\(name)")
                #expect(try await testbed.chappie(["accounts", "switch", name, "--codex-home", codex.path]).status == 0)
                let file = try JSONDocument(Data(contentsOf: codex.appendingPathComponent("auth.json")))
                let token = try #require(file.string("tokens", "refresh_token"))
                _ = try await testbed.control("/oauth/revoke", method: "POST", body: #"{"token":"\#(token)","token_type_hint":"refresh_token"}"#)
            }
            let refreshed = try await testbed.chappie(["refresh", "--all"])
            #expect(refreshed.status == 77)
            #expect(
                refreshed.stderr
                    == "all 2 accounts (home, work) FAILED the same way: OpenAI signed NAME out: its refresh token was revoked (a sign-out, or a password change). Sign NAME in again: chappie accounts add NAME\n",
                "\(refreshed.stderr)")
            let one = try await testbed.chappie(["refresh", "work", "--verbose"])
            #expect(one.stderr.contains("work: FAILED: OpenAI signed work out: its refresh token was revoked"), "\(one.stderr)")
            #expect(one.stderr.contains("refresh_token_invalidated"), "\(one.stderr)")
            let json = JSONDocument(Data(try await testbed.chappie(["refresh", "work", "--json"]).stdout.utf8))
            #expect(json.string(0, "error")?.hasPrefix("OpenAI signed work out") == true)
            #expect(json.string(0, "detail")?.contains("refresh_token_invalidated") == true)
        }
    }

    @Test("A daemon whose --http port is taken stops without having said it started")
    func daemonStartsOnlyListening() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            // The emulator's own port is taken.
            let port = try #require(URL(string: testbed.emulator.issuer)?.port)
            let result = try await testbed.chappie(["daemon", "--http", "127.0.0.1:\(port)", "--log-format", "json"])
            #expect(result.status == 1 && result.stderr.contains("cannot listen on 127.0.0.1 port \(port)"), "\(result.stderr)")
            #expect(!result.stderr.contains("daemon started"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: testbed.home.appendingPathComponent("chappie.sock").path))
        }
    }

    @Test("backup warns of a short passphrase, and writes the file all the same")
    func shortPassphrase() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            let elsewhere = try TestTokens.temporaryDirectory("chappie-short-backup")
            defer { try? FileManager.default.removeItem(at: elsewhere) }
            let file = elsewhere.appendingPathComponent("short.backup")
            let written = try await testbed.chappie(["backup", file.path, "--json"], environment: ["CHAPPIE_BACKUP_PASSPHRASE": "hunter2"])
            #expect(written.status == 0, "\(written.stderr)")
            #expect(written.stderr.contains("warning: the passphrase has 7 characters"), "\(written.stderr)")
            #expect(JSONDocument(Data(written.stdout.utf8)).string("passphraseWarning")?.hasPrefix("the passphrase has 7 characters") == true)
            let long = try await testbed.chappie(
                ["backup", elsewhere.appendingPathComponent("long.backup").path],
                environment: ["CHAPPIE_BACKUP_PASSPHRASE": "correct horse battery staple"])
            #expect(long.status == 0 && !long.stderr.contains("warning"), "\(long.stderr)")
        }
    }

    @Test("--key-file naming no file, for a new store: the command to make one, and no database left behind; made so, it works")
    func newKeyFile() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let place = try TestTokens.temporaryDirectory("chappie-new-key")
            defer { try? FileManager.default.removeItem(at: place) }
            let home = place.appendingPathComponent("store"), key = place.appendingPathComponent("chappie.key")
            let chappie = try BuiltProducts.executable("chappie")
            let line = [
                "accounts", "add", "work", "--key-file", key.path, "--home", home.path, "--issuer", testbed.emulator.issuer, "--backend",
                testbed.emulator.backend,
            ]
            let environment: [String: String?] = ["HOME": testbed.userHome.path, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil]
            let refused = try await runProcess(chappie, line, environment: environment)
            #expect(refused.status == 78, "\(refused.stderr)")
            let made = "(umask 077; head -c 32 /dev/urandom | base64 > \(key.path))"
            #expect(refused.stderr.contains("nothing was stored. Make one with: \(made)"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: home.path), "a failed add leaves no database behind")
            #expect(try await runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", made]).status == 0)
            let added = try await runProcess(chappie, line, environment: environment)
            #expect(added.status == 0, "\(added.stderr)")
        }
    }
}

import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie exec, run as a user runs it", .tags(.slow))
struct ExecEndToEndTests {
    /// A child that waits (bounded) until its sibling has started too, then prints who it is from
    /// `$CODEX_HOME/auth.json` and calls the emulator's usage endpoint with that account's token.
    static let child = #"""
        touch "$MEET/$CHAPPIE_ACCOUNT"; i=0
        while [ "$(ls "$MEET" | wc -l)" -lt 2 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
        field() { grep -o "\"$1\" *: *\"[^\"]*\"" "$CODEX_HOME/auth.json" | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/'; }
        echo "name=$CHAPPIE_ACCOUNT home=$CODEX_HOME met=$(ls "$MEET" | wc -l)"
        echo "account=$(field account_id)"
        echo "status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(field access_token)" -H "ChatGPT-Account-Id: $(field account_id)" "$BACKEND/wham/usage")"
        """#

    @Test(
        "A private Codex home shares the user's ~/.codex but its login: sessions land in ~/.codex/sessions, old private ones move there, config.toml and locks stay private"
    )
    func privateHomeSharesTheUsers() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let user = testbed.userHome.appendingPathComponent(".codex")
            let fileManager = FileManager.default
            try fileManager.createDirectory(at: user.appendingPathComponent("prompts"), withIntermediateDirectories: true)
            try fileManager.createDirectory(at: user.appendingPathComponent("sessions/2026/11/20"), withIntermediateDirectories: true)
            try Data("Be brief.\n".utf8).write(to: user.appendingPathComponent("AGENTS.md"))
            try Data("review\n".utf8).write(to: user.appendingPathComponent("prompts/review.md"))
            try Data("old\n".utf8).write(to: user.appendingPathComponent("sessions/2026/11/20/rollout-old.jsonl"))
            try Data("model = \"gpt-5\"\n".utf8).write(to: user.appendingPathComponent("config.toml"))
            try Data("held\n".utf8).write(to: user.appendingPathComponent("history.jsonl.lock"))
            #expect(try await testbed.chappie(["accounts", "add", "mine"]).status == 0)
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            // The user's own login, which the private home must not share.
            #expect(try await testbed.chappie(["accounts", "switch", "mine"]).status == 0)
            let userLogin = try Data(contentsOf: user.appendingPathComponent("auth.json"))

            let run = try await testbed.chappie([
                "exec", "work", "--", "sh", "-c",
                """
                cat "$CODEX_HOME/AGENTS.md" "$CODEX_HOME/prompts/review.md"; ls "$CODEX_HOME/sessions/2026/11/20"
                mkdir -p "$CODEX_HOME/sessions/2026/11/26" && echo turn > "$CODEX_HOME/sessions/2026/11/26/rollout-new.jsonl"
                echo first >> "$CODEX_HOME/history.jsonl"
                echo "home=$CODEX_HOME"
                """,
            ])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("Be brief.\nreview\nrollout-old.jsonl\n"), "\(run.stdout)")
            let home = URL(fileURLWithPath: try #require(run.stdout.components(separatedBy: "home=").last?.trimmingCharacters(in: .newlines)))
            #expect(
                fileManager.fileExists(atPath: user.appendingPathComponent("sessions/2026/11/26/rollout-new.jsonl").path),
                "Codex writes sessions into ~/.codex")
            // Private: the login, the generated config.toml and lock files.
            #expect(try Data(contentsOf: user.appendingPathComponent("auth.json")) == userLogin)
            #expect(try Data(contentsOf: home.appendingPathComponent("auth.json")) != userLogin)
            #expect(
                try fileManager.destinationOfSymbolicLink(atPath: home.appendingPathComponent("sessions").path)
                    == user.appendingPathComponent("sessions").path)
            #expect((try? fileManager.destinationOfSymbolicLink(atPath: home.appendingPathComponent("config.toml").path)) == nil)
            #expect(
                try String(contentsOf: home.appendingPathComponent("config.toml"), encoding: .utf8).contains("cli_auth_credentials_store = \"file\""))
            #expect(!fileManager.fileExists(atPath: home.appendingPathComponent("history.jsonl.lock").path))

            // A private sessions/ from before sharing moves over on the next run.
            try fileManager.removeItem(atPath: home.appendingPathComponent("sessions").path)
            try fileManager.createDirectory(at: home.appendingPathComponent("sessions/2026/11/01"), withIntermediateDirectories: true)
            try Data("before\n".utf8).write(to: home.appendingPathComponent("sessions/2026/11/01/rollout-before.jsonl"))
            let again = try await testbed.chappie(["exec", "work", "--", "true"])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(try String(contentsOf: user.appendingPathComponent("sessions/2026/11/01/rollout-before.jsonl"), encoding: .utf8) == "before\n")
            #expect(
                try fileManager.destinationOfSymbolicLink(atPath: home.appendingPathComponent("sessions").path)
                    == user.appendingPathComponent("sessions").path)
            // What Codex made in the private home that ~/.codex did not have moved over, and is shared.
            #expect(try String(contentsOf: user.appendingPathComponent("history.jsonl"), encoding: .utf8) == "first\n")
            #expect(
                try fileManager.destinationOfSymbolicLink(atPath: home.appendingPathComponent("history.jsonl").path)
                    == user.appendingPathComponent("history.jsonl").path)

            // A ~/.codex that cannot be shared (a file): a warning, and the command runs.
            let other = testbed.userHome.appendingPathComponent("odd")
            try Data("not a directory".utf8).write(to: other)
            let odd = try await testbed.chappie(["exec", "work", "--", "true"], environment: ["CODEX_HOME": other.path])
            #expect(odd.status == 0 && odd.stderr.contains("is not shared with work's private Codex home"), "\(odd.stderr)")

            // Removing the account removes its home and the links, never what they point to.
            #expect(try await testbed.chappie(["accounts", "remove", "work", "--yes"]).status == 0)
            #expect(!fileManager.fileExists(atPath: home.path))
            for kept in ["AGENTS.md", "prompts/review.md", "sessions/2026/11/26/rollout-new.jsonl", "sessions/2026/11/01/rollout-before.jsonl"] {
                #expect(fileManager.fileExists(atPath: user.appendingPathComponent(kept).path), "\(kept)")
            }
        }
    }

    @Test("A private home's config.toml that cannot be written is a failure (exit 1) naming the file, not a key problem (78)")
    func configurationNotWritten() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            #expect(try await testbed.chappie(["exec", "work", "--", "true"]).status == 0)
            let home = try #require(
                JSONDocument(Data(try await testbed.chappie(["accounts", "show", "work", "--json"]).stdout.utf8)).string("codexHome"))
            // A directory where the file goes: no rename can replace it, whoever runs the test.
            let configuration = URL(fileURLWithPath: home).appendingPathComponent("config.toml")
            try FileManager.default.removeItem(at: configuration)
            try FileManager.default.createDirectory(at: configuration, withIntermediateDirectories: false)
            let failed = try await testbed.chappie(["exec", "work", "--", "true"])
            #expect(failed.status == 1, "\(failed.status): \(failed.stderr)")
            #expect(failed.stderr.contains("cannot write") && failed.stderr.contains("config.toml"), "\(failed.stderr)")
            #expect(!failed.stderr.lowercased().contains("key"), "\(failed.stderr)")
        }
    }

    static func accounts(_ listed: ProcessResult) throws -> [[String: Any]] {
        try #require(JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
    }

    @Test("two accounts run side by side, each in its own private Codex home; the active account and the user's Codex home are untouched")
    func twoAccountsAtOnce() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let userCodex = try TestTokens.temporaryDirectory("codex-user")
            let meet = try TestTokens.temporaryDirectory("exec-meet")
            defer {
                try? FileManager.default.removeItem(at: userCodex)
                try? FileManager.default.removeItem(at: meet)
            }
            try Data("model = \"gpt-5\"\ncli_auth_credentials_store = \"keyring\"\n[profiles.x]\ncli_auth_credentials_store = \"keep\"\n".utf8)
                .write(to: userCodex.appendingPathComponent("config.toml"))
            let environment: [String: String?] = ["CODEX_HOME": userCodex.path, "MEET": meet.path, "BACKEND": testbed.emulator.backend]
            let chappie = { (arguments: [String]) in try await testbed.chappie(arguments, environment: environment) }
            #expect(try await chappie(["accounts", "add", "work"]).status == 0)
            #expect(try await chappie(["accounts", "add", "home"]).status == 0)
            #expect(try await chappie(["accounts", "add", "idle"]).status == 0)
            #expect(try await chappie(["accounts", "switch", "idle", "--no-codex-home"]).status == 0)
            let accounts = try Self.accounts(await chappie(["accounts", "list", "--json"]))
            func chatgptID(_ name: String) -> String? {
                accounts.first { $0["name"] as? String == name }?["chatgptAccountID"] as? String
            }

            async let work = testbed.chappie(["exec", "--account", "work", "--", "sh", "-c", Self.child], environment: environment)
            async let home = testbed.chappie(["exec", "--account", "home", "--", "sh", "-c", Self.child], environment: environment)
            let (workRun, homeRun) = try await (work, home)
            for (run, name) in [(workRun, "work"), (homeRun, "home")] {
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stdout.contains("name=\(name) "))
                #expect(run.stdout.contains("met=2"), "the two children ran at the same time")
                #expect(run.stdout.contains("account=\(chatgptID(name) ?? "?")\n"))
                #expect(run.stdout.contains("status=200"))
                #expect(run.stdout.contains("home=\(testbed.home.path)/codex-homes/"))
            }
            #expect(chatgptID("work") != chatgptID("home"))

            // Each private home is the account's own: 0700, with a config.toml made from the user's.
            let shown = JSONDocument(Data(try await chappie(["accounts", "show", "work", "--json"]).stdout.utf8))
            let workHome = try #require(shown.string("codexHome"))
            #expect(workHome.hasPrefix(testbed.home.path + "/codex-homes/"))
            #expect(try FileManager.default.attributesOfItem(atPath: workHome)[.posixPermissions] as? Int == 0o700)
            #expect(try FileManager.default.attributesOfItem(atPath: workHome + "/auth.json")[.posixPermissions] as? Int == 0o600)
            let config = try String(contentsOfFile: workHome + "/config.toml", encoding: .utf8)
            #expect(config.contains("cli_auth_credentials_store = \"file\"\n"))
            #expect(!config.contains("\"keyring\""))
            #expect(config.contains("model = \"gpt-5\""))
            #expect(config.contains("[profiles.x]\ncli_auth_credentials_store = \"keep\""), "a table's own key is left alone")

            // The active account and the user's Codex home did not change.
            let active = try Self.accounts(await chappie(["accounts", "list", "--json"])).first { $0["active"] as? Bool == true }
            #expect(active?["name"] as? String == "idle")
            #expect(!FileManager.default.fileExists(atPath: userCodex.appendingPathComponent("auth.json").path))
            #expect(try await chappie(["log", "--json"]).stdout.contains("codex_home_claimed"))

            // A second exec of the account shares its one home.
            let again = try await chappie(["exec", "--account", "work", "--", "sh", "-c", "echo \"$CODEX_HOME\""])
            #expect(again.stdout == workHome + "\n")

            // While a command exec started runs, the account neither leaves its home nor is removed:
            // that Codex holds its refresh token. The command itself tries both, holding the in-use lock.
            let other = try TestTokens.temporaryDirectory("codex-other")
            defer { try? FileManager.default.removeItem(at: other) }
            var inside = environment
            inside["CHAPPIE"] = try BuiltProducts.executable("chappie").path
            inside["SERVICE"] = testbed.service.joined(separator: " ")
            let attempts = try await testbed.chappie(
                [
                    "exec", "--account", "work", "--", "sh", "-c",
                    #"""
                    "$CHAPPIE" accounts switch work --codex-home "$OTHER" $SERVICE; echo "switch=$?"
                    "$CHAPPIE" accounts remove work --yes $SERVICE; echo "remove=$?"
                    """#,
                ], environment: inside.merging(["OTHER": other.path]) { $1 })
            #expect(attempts.status == 0, "\(attempts.stderr)")
            #expect(attempts.stdout.contains("switch=1"), "\(attempts.stdout)")
            #expect(attempts.stdout.contains("remove=1"), "\(attempts.stdout)")
            #expect(attempts.stderr.contains("work is in use"))
            #expect(FileManager.default.fileExists(atPath: workHome + "/auth.json"))

            // Removing the account removes its private home and the tokens in it.
            #expect(try await chappie(["accounts", "remove", "work", "--yes"]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: workHome))
        }
    }

    @Test("an account that owns a Codex home runs there; the exit status passes through; signals are the child's own")
    func ownedHomeAndExitStatus() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let codex = try TestTokens.temporaryDirectory("codex-owned")
            defer { try? FileManager.default.removeItem(at: codex) }
            let chappie = { (arguments: [String]) in try await testbed.chappie(arguments, environment: ["CODEX_HOME": codex.path]) }
            #expect(try await chappie(["accounts", "add", "work"]).status == 0)
            #expect(try await chappie(["accounts", "switch", "work", "--codex-home", codex.path]).status == 0)

            // The active account (no --account) runs in the home switch gave it; no config.toml is written there.
            let run = try await chappie([
                "exec", "--", "sh", "-c", #"echo "$CODEX_HOME $CHAPPIE_ACCOUNT"; grep SigIgn /proc/self/status; ls /proc/self/fd | wc -l; exit 7"#,
            ])
            #expect(run.status == 7, "\(run.stderr)")
            #expect(run.stdout.hasPrefix("\(codex.standardizedFileURL.path) work\n"))
            #expect(!FileManager.default.fileExists(atPath: codex.appendingPathComponent("config.toml").path))
            // SIGINT (bit 2) and SIGTERM (bit 15) are not ignored in the child, although chappie ignored them.
            let ignored = run.stdout.split(separator: "\n").first { $0.hasPrefix("SigIgn:") }.flatMap {
                UInt64($0.split(separator: "\t").last ?? "", radix: 16)
            }
            #expect(ignored.map { $0 & (1 << 1 | 1 << 14) } == 0)
            // No descriptor of chappie's (store, locks, sockets) reaches the command: 0, 1, 2, the
            // in-use lock the command holds for the account, and ls's own.
            #expect(run.stdout.hasSuffix("\n5\n"), "\(run.stdout)")

            let missing = try await chappie(["exec", "--account", "work", "--", "no-such-command-here"])
            #expect(missing.status == 127)
            #expect(missing.stderr.contains("cannot run no-such-command-here"))
            let unnamed = try await chappie(["exec", "--account", "work"])
            #expect(unnamed.status == 2)
            #expect(unnamed.stderr.contains("after --"))
            let unknown = try await chappie(["exec", "--account", "nobody", "--", "true"])
            #expect(unknown.status != 0)
            #expect(unknown.stderr.contains("nobody"))

            // A login someone else put in the owned home is never overwritten.
            try Data(#"{"OPENAI_API_KEY":"sk-not-chappies"}"#.utf8).write(to: codex.appendingPathComponent("auth.json"))
            let foreign = try await chappie(["exec", "--", "true"])
            #expect(foreign.status != 0)
            #expect(foreign.stderr.contains("holds another login"))
            #expect(try String(contentsOf: codex.appendingPathComponent("auth.json"), encoding: .utf8).contains("sk-not-chappies"))
        }
    }
}

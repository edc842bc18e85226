import ChappieTestSupport
import Foundation
import Testing

@Suite("Global options before the subcommand, and the service from the environment", .tags(.slow))
struct GlobalOptionsEndToEndTests {
    @Test("--home, --issuer, --backend and --json work before the subcommand; $CHAPPIE_ISSUER and $CHAPPIE_BACKEND are the defaults")
    func globalOptionsAnywhere() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let chappie = try BuiltProducts.executable("chappie")
            let clean: [String: String?] = [
                "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_ISSUER": nil, "CHAPPIE_BACKEND": nil, "HOME": testbed.userHome.path,
                "CODEX_HOME": nil,
            ]

            // Everything before the subcommand.
            let added = try await runProcess(
                chappie,
                [
                    "--home", testbed.home.path, "--issuer", testbed.emulator.issuer, "--backend=\(testbed.emulator.backend)", "accounts", "add",
                    "work",
                ],
                environment: clean, timeout: .seconds(60))
            #expect(added.status == 0, "\(added.stderr)")
            let listed = try await runProcess(chappie, ["--json", "--home", testbed.home.path, "accounts", "list"], environment: clean)
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(listed.stdout.contains("\"name\" : \"work\""), "\(listed.stdout)")

            // The service from the environment only.
            var fromEnvironment = clean
            fromEnvironment["CHAPPIE_ISSUER"] = testbed.emulator.issuer
            fromEnvironment["CHAPPIE_BACKEND"] = testbed.emulator.backend
            let second = try await runProcess(
                chappie, ["accounts", "add", "home", "--home", testbed.home.path], environment: fromEnvironment, timeout: .seconds(60))
            #expect(second.status == 0, "\(second.stderr)")
            // Without either, the real issuer would be asked: a bad value shows the environment is read.
            var bad = clean
            bad["CHAPPIE_ISSUER"] = "ftp://nowhere"
            let refused = try await runProcess(chappie, ["accounts", "list", "--home", testbed.home.path], environment: bad)
            #expect(refused.status == 2, "\(refused.stderr)")

            // Global options before the subcommand stay chappie's: they move to before a `--`, never into
            // the command after it, whose own `--json` stays its own.
            let ran = try await runProcess(
                chappie, ["--json", "--home", testbed.home.path, "exec", "--account", "work", "--", "echo", "--json"], environment: fromEnvironment)
            #expect(ran.status == 0, "\(ran.stderr)")
            #expect(ran.stdout == "--json\n")

            // A global option without a subcommand is a usage error, as before.
            #expect(try await runProcess(chappie, ["--home", testbed.home.path], environment: clean).status != 0)
        }
    }
}

@Suite("Mistyped commands", .tags(.slow))
struct CommandTypoEndToEndTests {
    @Test(
        "A mistyped command or subcommand is named with the nearest one, exit 2; real commands, help and account names still pass",
        arguments: [
            (["acounts", "list"], Int32(2), "unknown command 'acounts' for 'chappie'. Did you mean 'accounts'?"),
            (["--json", "acounts", "list"], 2, "Did you mean 'accounts'?"),
            (["accounts", "swich", "work"], 2, "unknown command 'swich' for 'chappie accounts'. Did you mean 'switch'?"),
            (["key", "rotat"], 2, "Did you mean 'rotate'?"),
            (["xyzzy"], 2, "Run 'chappie --help' for the commands."),
            (["accounts", "list"], 0, ""),
            (["usage", "nobody"], 1, "no account named nobody"),
            // An account name one letter from a subcommand (`show`) is an account name: the parser takes it.
            (["usage", "snow"], 1, "no account named snow"),
            (["help", "accounts"], 0, ""),
        ])
    func typos(arguments: [String], status: Int32, words: String) async throws {
        let home = try TestTokens.temporaryDirectory("chappie-typo")
        defer { try? FileManager.default.removeItem(at: home) }
        let result = try await runProcess(
            try BuiltProducts.executable("chappie"), arguments,
            environment: ["CHAPPIE_HOME": home.path, "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_KEY_FILE": nil])
        #expect(result.status == status, "\(arguments): \(result.stderr)")
        #expect(words.isEmpty || result.stderr.contains(words), "\(arguments): \(result.stderr)")
    }
}

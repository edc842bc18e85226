import ChappieTestSupport
import Foundation
import Testing

/// `chappie hook`: in a directory bound with `chappie bind`, a plain `codex` runs as its account.
@Suite("The shell hook points CODEX_HOME at a bound directory's account, and puts it back on leaving", .tags(.slow))
struct ShellHookEndToEndTests {
    /// Runs a script in `shell` as a user's interactive shell would run the hook at its prompts,
    /// with chappie on `PATH` and the testbed's service in the environment.
    private func run(_ shell: String, _ script: String, _ testbed: ChappieTestbed, codexHome: String?) async throws -> ProcessResult {
        let chappie = try BuiltProducts.executable("chappie")
        return try await runProcess(
            URL(fileURLWithPath: "/usr/bin/\(shell)"), ["-c", script],
            environment: [
                "PATH": chappie.deletingLastPathComponent().path + ":/usr/bin:/bin", "HOME": testbed.userHome.path,
                "CHAPPIE_HOME": testbed.home.path, "CHAPPIE_ISSUER": testbed.emulator.issuer, "CHAPPIE_BACKEND": testbed.emulator.backend,
                "CODEX_HOME": codexHome, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_ACCOUNT": nil, "CHAPPIE_HOOK": nil,
                "CHAPPIE_HOOK_ACCOUNT": nil, "CHAPPIE_HOOK_SAVED": nil,
            ], directory: testbed.home)
    }

    @Test("bash, zsh and fish: in the bound directory CODEX_HOME is the account's own home with its tokens; outside it is as before")
    func hookFollowsTheBinding() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let codex = testbed.home.appendingPathComponent("codex")
            for name in ["work", "side"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            #expect(try await testbed.chappie(["accounts", "switch", "work", "--codex-home", codex.path]).status == 0)
            let project = testbed.home.appendingPathComponent("project")
            let nested = project.appendingPathComponent("src")
            try FileManager.default.createDirectory(at: nested, withIntermediateDirectories: true)

            // Before the hook: bind says what a plain codex runs as, and the prompt shows it.
            let bound = try await testbed.chappie(["bind", "side"], directory: project)
            #expect(bound.status == 0)
            #expect(bound.stderr.contains("a plain codex here still runs as the active account, work"), "\(bound.stderr)")
            #expect(bound.stderr.contains(#"eval "$(chappie hook bash)""#))
            let prompt = try await testbed.chappie(["prompt", "--format", "{account}"], directory: nested)
            #expect(prompt.stdout == "side (codex: work)\n", "\(prompt.stdout)")
            let hooked = try await testbed.chappie(
                ["prompt", "--format", "{account}"], environment: ["CHAPPIE_HOOK_ACCOUNT": "side"], directory: nested)
            #expect(hooked.stdout == "side\n", "\(hooked.stdout)")

            let side = JSONDocument(Data(try await testbed.chappie(["accounts", "show", "side", "--json"]).stdout.utf8))
            let steps: [String: String] = [
                "bash":
                    #"eval "$(chappie hook bash)"; cd project/src; _chappie_hook; echo "in:$CODEX_HOME:$CHAPPIE_HOOK_ACCOUNT"; cd ../..; _chappie_hook; echo "out:${CODEX_HOME-unset}:${CHAPPIE_HOOK_ACCOUNT-none}""#,
                "zsh":
                    #"eval "$(chappie hook zsh)"; cd project/src; _chappie_hook; echo "in:$CODEX_HOME:$CHAPPIE_HOOK_ACCOUNT"; cd ../..; _chappie_hook; echo "out:${CODEX_HOME-unset}:${CHAPPIE_HOOK_ACCOUNT-none}""#,
                "fish":
                    #"chappie hook fish | source; cd project/src; emit fish_prompt; echo "in:$CODEX_HOME:$CHAPPIE_HOOK_ACCOUNT"; cd ../..; emit fish_prompt; set -q CODEX_HOME; and echo "out:$CODEX_HOME:"(set -q CHAPPIE_HOOK_ACCOUNT; and echo $CHAPPIE_HOOK_ACCOUNT; or echo none); or echo "out:unset:"(set -q CHAPPIE_HOOK_ACCOUNT; and echo $CHAPPIE_HOOK_ACCOUNT; or echo none)"#,
            ]
            for (shell, script) in steps.sorted(by: { $0.key < $1.key }) {
                for before in [nil, "/tmp/codex of mine's"] {
                    let result = try await run(shell, script, testbed, codexHome: before)
                    #expect(result.status == 0, "\(shell): \(result.stderr)")
                    // fish turns bracketed paste on and off around its prompt events.
                    let printed = result.stdout.replacingOccurrences(of: "\u{1B}[?2004h", with: "").replacingOccurrences(
                        of: "\u{1B}[?2004l", with: "")
                    let lines = printed.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                    let inside = try #require(lines.first { $0.hasPrefix("in:") }, "\(shell): \(result.stdout) \(result.stderr)")
                    let home = String(inside.dropFirst(3).dropLast(":side".count))
                    #expect(inside.hasSuffix(":side"), "\(shell): \(inside)")
                    #expect(home.contains("/codex-homes/"), "\(shell): side's own private home, not work's \(codex.path): \(home)")
                    let held = FileManager.default.contents(atPath: home + "/auth.json").map(JSONDocument.init)
                    #expect(held?.string("tokens", "account_id") == side.string("chatgptAccountID"), "\(shell)")
                    #expect(lines.contains("out:\(before ?? "unset"):none"), "\(shell): \(result.stdout)")
                }
            }
            // The active account's home is left as it was.
            let work = JSONDocument(Data(try await testbed.chappie(["accounts", "show", "work", "--json"]).stdout.utf8))
            #expect(work.string("codexHome") == codex.path)

            // A codex the hooked shell started in side's home holds side's tokens: side does not leave
            // that home while it runs (chappie would redeem from the new home what it holds).
            let sideHome = try #require(
                JSONDocument(Data(try await testbed.chappie(["accounts", "show", "side", "--json"]).stdout.utf8)).string("codexHome"))
            let bin = testbed.home.appendingPathComponent("bin")
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: URL(fileURLWithPath: "/bin/sleep"), to: bin.appendingPathComponent("codex"))
            let running = try ChildProcess(bin.appendingPathComponent("codex"), ["600"], environment: ["CODEX_HOME": sideHome])
            defer { kill(running.processIdentifier, SIGKILL) }
            let elsewhere = testbed.home.appendingPathComponent("codex-elsewhere")
            let refused = try await testbed.chappie(["accounts", "switch", "side", "--codex-home", elsewhere.path])
            #expect(
                refused.status == 1 && refused.stderr.contains("side is in use: Codex runs in \(sideHome) (pid \(running.processIdentifier))"),
                "\(refused.stderr)")
            kill(running.processIdentifier, SIGKILL)
            await running.waitUntilExit()
            #expect(try await testbed.chappie(["accounts", "switch", "side", "--codex-home", elsewhere.path]).status == 0)
        }
    }
}

import ChappieTestSupport
import Foundation
import Testing

@Suite("make install's completions and man page, generated from the commands", .tags(.slow))
struct InstallExtrasEndToEndTests {
    @Test("scripts/install-extras.sh installs bash, zsh and fish completions and a man page that name every command")
    func installsCompletionsAndManual() async throws {
        let prefix = try TestTokens.temporaryDirectory("chappie-prefix")
        defer { try? FileManager.default.removeItem(at: prefix) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let installed = try await runProcess(
            root.appendingPathComponent("scripts/install-extras.sh"),
            [try BuiltProducts.executable("chappie").path, try BuiltProducts.executable("generate-manual").path, prefix.path])
        #expect(installed.status == 0, "\(installed.stderr)")

        let share = prefix.appendingPathComponent("share")
        let bash = try String(contentsOf: share.appendingPathComponent("bash-completion/completions/chappie"), encoding: .utf8)
        let zsh = try String(contentsOf: share.appendingPathComponent("zsh/site-functions/_chappie"), encoding: .utf8)
        let fish = try String(contentsOf: share.appendingPathComponent("fish/vendor_completions.d/chappie.fish"), encoding: .utf8)
        let manual = try String(contentsOf: share.appendingPathComponent("man/man1/chappie.1"), encoding: .utf8)
        #expect(zsh.hasPrefix("#compdef chappie"))
        #expect(fish.contains("complete -c 'chappie'"))
        for command in ["exec", "backup", "restore", "accounts", "daemon"] {
            #expect(bash.contains(command), "bash completes \(command)")
            #expect(zsh.contains(command), "zsh completes \(command)")
            #expect(fish.contains(command), "fish completes \(command)")
            #expect(manual.contains(command), "the man page describes \(command)")
        }
        #expect(manual.contains(".Dt CHAPPIE 1"))
        // The documents messages point to (share/doc/chappie/team-pool.md and the others).
        for document in ["README.md", "cli.md", "operations.md", "team-pool.md", "security.md", "backup.md"] {
            #expect(FileManager.default.fileExists(atPath: share.appendingPathComponent("doc/chappie/\(document)").path), "\(document)")
        }
        #expect(!manual.contains("callback-port"), "hidden options stay hidden")
        // The bash script parses.
        #expect(
            try await runProcess(URL(fileURLWithPath: "/bin/bash"), ["-n", share.appendingPathComponent("bash-completion/completions/chappie").path])
                .status == 0)
    }
}

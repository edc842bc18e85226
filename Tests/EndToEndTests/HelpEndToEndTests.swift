import ChappieTestSupport
import Foundation
import GRDB
import Testing

@Suite("Help shows a command's own options first with their defaults; completions work and offer account names", .tags(.slow))
struct HelpEndToEndTests {
    @Test(
        "Each subcommand's help lists its own options, with defaults, before the global ones",
        arguments: [
            (["daemon", "--help"], "--poll-interval", "(default: 10m)"),
            (["token", "--help"], "--margin", "(default: 5m)"),
            (["usage", "show", "--help"], "--max-age", "(default: 60s)"),
            (["accounts", "switch", "--help"], "--no-codex-home", "--codex-home"),
        ])
    func ownOptionsFirst(_ arguments: [String], _ own: String, _ shown: String) async throws {
        let help = try await runProcess(try BuiltProducts.executable("chappie"), arguments)
        #expect(help.status == 0)
        let text = help.stdout
        let ownAt = try #require(text.range(of: "  \(own)"), "\(text)")
        let globalAt = try #require(text.range(of: "  --home <dir>"), "\(text)")
        #expect(ownAt.lowerBound < globalAt.lowerBound, "\(own) must come before the global options:\n\(text)")
        #expect(text.contains(shown), "\(text)")
        // The global options stay together, in one block at the end, under their own heading.
        let headingAt = try #require(text.range(of: "\nGLOBAL OPTIONS:\n  --home <dir>"), "\(text)")
        #expect(ownAt.lowerBound < headingAt.lowerBound && text.contains("OPTIONS:\n"))
        let globals = ["--home", "--issuer", "--backend", "--key-file", "--store", "--machine", "--json", "--verbose"]
        let positions = globals.compactMap { text.range(of: "  \($0) ")?.lowerBound ?? text.range(of: "  \($0)\n")?.lowerBound }
        #expect(positions == positions.sorted() && positions.count == globals.count, "\(text)")
    }

    @Test("chappie completions SHELL prints a script for bash, zsh and fish; another shell is a usage error")
    func completionScripts() async throws {
        let chappie = try BuiltProducts.executable("chappie")
        for shell in ["bash", "zsh", "fish"] {
            let script = try await runProcess(chappie, ["completions", shell])
            #expect(script.status == 0 && script.stdout.contains("---completion accounts switch"), "\(shell): \(script.stderr)")
        }
        let other = try await runProcess(chappie, ["completions", "tcsh"])
        #expect(other.status == 2 && other.stderr.contains("choose bash, zsh or fish"), "\(other.stderr)")
    }

    @Test("Completing a NAME offers the stored accounts, read without unlocking: a passphrase store does not prompt")
    func accountNamesWithoutUnlocking() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["work", "home", "wide"] {
                #expect(try await testbed.chappie(["accounts", "add", name], environment: ["CHAPPIE_PASSPHRASE": "correct horse"]).status == 0)
            }
            let chappie = try BuiltProducts.executable("chappie")
            let words = ["chappie", "--home", testbed.home.path, "accounts", "switch"]
            // As the bash script calls it: the argument, the word's index, the cursor in it, the words.
            let complete = { (prefix: String) in
                try await runProcess(
                    chappie, ["---completion", "accounts", "switch", "--", "positional@0", "5", "\(prefix.count)"] + words + [prefix],
                    environment: ["CHAPPIE_PASSPHRASE": nil, "CHAPPIE_KEY_FILE": nil], input: "")
            }
            let all = try await complete("")
            #expect(all.status == 0, "\(all.stderr)")
            #expect(all.stdout.split(separator: "\n") == ["home", "wide", "work"], "\(all.stdout)")
            #expect(try await complete("w").stdout.split(separator: "\n") == ["wide", "work"])
            #expect(!all.stderr.lowercased().contains("passphrase"))

            // A database planted in a --home, with a name a shell would run: only valid names are offered.
            let planted = testbed.home.appendingPathComponent("planted")
            try FileManager.default.createDirectory(at: planted, withIntermediateDirectories: true)
            let database = try DatabaseQueue(path: planted.appendingPathComponent("chappie.sqlite").path)
            try await database.write { db in
                try db.execute(sql: "CREATE TABLE accounts (name TEXT)")
                try db.execute(sql: "INSERT INTO accounts (name) VALUES ('good'), ('$(touch pwned)'), ('`id`')")
            }
            try database.close()
            let offered = try await runProcess(
                chappie,
                ["---completion", "accounts", "switch", "--", "positional@0", "5", "0", "chappie", "--home", planted.path, "accounts", "switch", ""])
            #expect(offered.stdout.split(separator: "\n") == ["good"], "\(offered.stdout)")
        }
    }
}

import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie prompt: a line for shell prompts that never breaks one")
struct PromptEndToEndTests {
    @Test("Nothing and exit 0 with no account or a binding to none; the active or bound account's line from stored readings, without polling")
    func promptLine() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let empty = try await testbed.chappie(["prompt"])
            #expect(empty.status == 0)
            #expect(empty.stdout.isEmpty && empty.stderr.isEmpty, "\(empty.stdout)\(empty.stderr)")
            // accounts current, by contrast, fails, and says what a new user does first.
            let none = try await testbed.chappie(["accounts", "current"])
            #expect(none.status == 1 && none.stderr.contains("no account yet; sign one in with: chappie accounts add NAME"), "\(none.stderr)")

            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            #expect(try await testbed.chappie(["prompt"]).stdout == "work\n")
            let id = try #require(try await testbed.control("/_emulator/accounts").string(0, "account_id"))
            _ = try await testbed.control("/_emulator/accounts/\(id)/usage", method: "POST", body: #"{"five_hour_used_percent":42}"#)
            #expect(try await testbed.chappie(["usage", "poll", "work"]).status == 0)
            let polls = try await testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") ?? 0
            // Read without the key and without writing: the database is as it was (SQLite may add its
            // own -wal and -shm files beside it when it opens a WAL database, even to read).
            func storeFiles() throws -> [String: Data] {
                let names = try FileManager.default.contentsOfDirectory(atPath: testbed.home.path).filter { $0.hasPrefix("chappie.sqlite") }
                return try Dictionary(uniqueKeysWithValues: names.map { ($0, try Data(contentsOf: testbed.home.appendingPathComponent($0))) })
            }
            let before = try storeFiles()
            let line = try await testbed.chappie(["prompt"])
            let after = try storeFiles()
            for (name, data) in before { #expect(after[name] == data, "\(name) changed") }
            #expect(Set(after.keys).subtracting(before.keys).isSubset(of: ["chappie.sqlite-wal", "chappie.sqlite-shm"]))
            #expect(line.status == 0)
            #expect(line.stdout.range(of: #"^work 5h 42% ↻\d\d:\d\d\n$"#, options: .regularExpression) != nil, "\(line.stdout)")
            #expect(try await testbed.chappie(["prompt", "--format", "{account} {left}%"]).stdout == "work 58%\n")
            #expect(try await testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") == polls)

            // A directory bound to an account that does not exist: nothing, exit 0.
            let project = testbed.home.appendingPathComponent("project")
            try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            try Data("ghost\n".utf8).write(to: project.appendingPathComponent(".chappie-account"))
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: project.appendingPathComponent(".chappie-account").path)
            let ghost = try await testbed.chappie(["prompt"], directory: project)
            #expect(ghost.status == 0)
            #expect(ghost.stdout.isEmpty && ghost.stderr.isEmpty)
            // Run from a directory that was removed: nothing, exit 0 (the account is not bound by any).
            let gone = testbed.home.appendingPathComponent("gone/here")
            try FileManager.default.createDirectory(at: gone, withIntermediateDirectories: true)
            let chappie = try BuiltProducts.executable("chappie").path
            let removed = try await runProcess(
                URL(fileURLWithPath: "/bin/sh"),
                ["-c", "cd \"$1\" && rmdir \"$1\" && program=\"$2\" && shift 2 && exec \"$program\" prompt \"$@\"", "sh", gone.path, chappie]
                    + testbed.service,
                environment: ["HOME": testbed.home.path])
            #expect(removed.status == 0, "\(removed.stderr)")
            #expect(removed.stderr.isEmpty, "\(removed.stderr)")
            // A format with an unknown placeholder is a usage error, said at once.
            let badFormat = try await testbed.chappie(["prompt", "--format", "{acount}"])
            #expect(badFormat.status == 2)
            #expect(badFormat.stderr.contains("{acount}"), "\(badFormat.stderr)")
        }
    }
}

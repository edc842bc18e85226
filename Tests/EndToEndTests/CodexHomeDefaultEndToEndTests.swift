import ChappieTestSupport
import Foundation
import Testing

@Suite("The default Codex home: switch finds $CODEX_HOME or ~/.codex, keeps it, and loses no login there", .tags(.slow))
struct CodexHomeDefaultEndToEndTests {
    private func accountIDs(_ testbed: ChappieTestbed) async throws -> [String: String] {
        let list = JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8))
        return (list.array() ?? []).compactMap { $0 as? [String: Any] }.reduce(into: [:]) {
            $0[$1["name"] as? String ?? ""] = $1["chatgptAccountID"] as? String
        }
    }

    private func heldAccountID(_ home: URL) -> String? {
        guard let data = FileManager.default.contents(atPath: home.appendingPathComponent("auth.json").path) else { return nil }
        return JSONDocument(data).string("tokens", "account_id")
    }

    @Test("A new user's ~/.codex from codex login: the login is imported and announced, then the switch writes ~/.codex and keeps it as the setting")
    func codexLoginIsImportedFirst() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let codex = testbed.userHome.appendingPathComponent(".codex")
            try FileManager.default.createDirectory(at: codex, withIntermediateDirectories: true)

            // What `codex login` leaves: an issuer-signed login chappie has never seen, here made by a
            // second chappie data directory writing that home, which is then removed with chappie's
            // lock files (a login another store still holds is never imported: see below).
            let other = testbed.home.appendingPathComponent("other")
            let service = ["--issuer", testbed.emulator.issuer, "--backend", testbed.emulator.backend, "--home", other.path]
            let chappie = try BuiltProducts.executable("chappie")
            let environment: [String: String?] = [
                "HOME": testbed.userHome.path, "CODEX_HOME": nil, "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_KEY_FILE": nil,
            ]
            #expect(try await runProcess(chappie, ["accounts", "add", "mine"] + service, environment: environment).status == 0)
            #expect(
                try await runProcess(chappie, ["accounts", "switch", "mine", "--codex-home", codex.path] + service, environment: environment).status
                    == 0)
            let login = try #require(heldAccountID(codex))
            let before = try Data(contentsOf: codex.appendingPathComponent("auth.json"))
            // Written by chappie for another data directory that still exists: refused, naming the way out, and nothing changes.
            #expect(try await testbed.chappie(["accounts", "add", "first"]).status == 0)
            let refused = try await testbed.chappie(["accounts", "switch", "first"])
            #expect(
                refused.status == 78 && refused.stderr.contains("is the Codex home of another chappie data directory, \(other.path)"),
                "\(refused.stderr)")
            #expect(try Data(contentsOf: codex.appendingPathComponent("auth.json")) == before)
            try FileManager.default.removeItem(at: other)
            for lock in ["auth.json.lock", ".chappie-exec.lock"] { try? FileManager.default.removeItem(at: codex.appendingPathComponent(lock)) }

            // The first account stored became active and said so, but wrote no Codex home.
            #expect(try await testbed.chappie(["accounts", "current"]).stdout == "first\n")
            #expect(try Data(contentsOf: codex.appendingPathComponent("auth.json")) == before)
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)

            let switched = try await testbed.chappie(["accounts", "switch", "work"])
            #expect(switched.status == 0, "\(switched.stderr)")
            let ids = try await accountIDs(testbed)
            let imported = try #require(ids.first { $0.value == login }?.key, "the login in ~/.codex must be an account now: \(ids)")
            #expect(imported != "work")
            #expect(switched.stderr.contains("Imported the login") && switched.stderr.contains("as \(imported)"), "\(switched.stderr)")
            #expect(switched.stdout.contains("~/.codex; it is now the codex-home setting"), "\(switched.stdout)")
            #expect(heldAccountID(codex) == ids["work"])
            #expect(try await testbed.chappie(["config", "get", "codex-home"]).stdout.contains(codex.path))

            // Switching back needs no import, and the imported account's tokens work.
            let back = try await testbed.chappie(["accounts", "switch", imported])
            #expect(back.status == 0 && !back.stderr.contains("Imported"), "\(back.stderr)")
            #expect(heldAccountID(codex) == login)
            #expect(try await testbed.chappie(["refresh", imported]).status == 0)
        }
    }

    @Test("$CODEX_HOME comes first, one of chappie's own private homes is ignored, and --no-codex-home writes nothing")
    func environmentAndOptOut() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "a"]).status == 0)
            #expect(try await testbed.chappie(["accounts", "add", "b"]).status == 0)
            let ids = try await accountIDs(testbed)

            // No ~/.codex, and $CODEX_HOME inside chappie's private homes (as `exec` sets it): no home.
            let privateHome = testbed.home.appendingPathComponent("codex-homes/0000")
            let inside = try await testbed.chappie(["accounts", "switch", "b"], environment: ["CODEX_HOME": privateHome.path])
            #expect(inside.status == 0 && !inside.stdout.contains("Codex will use it"), "\(inside.stdout)")
            #expect(!FileManager.default.fileExists(atPath: privateHome.appendingPathComponent("auth.json").path))

            // --no-codex-home: nothing written and nothing stored, whatever $CODEX_HOME says.
            let mine = testbed.home.appendingPathComponent("codex-env")
            let skipped = try await testbed.chappie(["accounts", "switch", "a", "--no-codex-home"], environment: ["CODEX_HOME": mine.path])
            #expect(skipped.status == 0)
            #expect(heldAccountID(mine) == nil)
            #expect(try await testbed.chappie(["config", "get", "codex-home"]).stdout.contains(mine.path) == false)

            let used = try await testbed.chappie(["accounts", "switch", "b"], environment: ["CODEX_HOME": mine.path])
            #expect(used.status == 0)
            #expect(used.stdout.contains("$CODEX_HOME; it is now the codex-home setting"), "\(used.stdout)")
            #expect(heldAccountID(mine) == ids["b"])
            // The setting now decides, whatever the environment says later.
            #expect(try await testbed.chappie(["accounts", "switch", "a"], environment: ["CODEX_HOME": privateHome.path]).status == 0)
            #expect(heldAccountID(mine) == ids["a"])

            let both = try await testbed.chappie(["accounts", "switch", "a", "--no-codex-home", "--codex-home", mine.path])
            #expect(both.status == 2)

            // A $CODEX_HOME others may write is not written when only found, not configured: the
            // switch is done all the same, says why, and stores no setting.
            #expect(try await testbed.chappie(["config", "unset", "codex-home"]).status == 0)
            let open = testbed.home.appendingPathComponent("codex-open")
            try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
            chmod(open.path, 0o777)
            let passed = try await testbed.chappie(["accounts", "switch", "b"], environment: ["CODEX_HOME": open.path])
            #expect(passed.status == 0 && passed.stderr.contains("note: $CODEX_HOME (\(open.path)) was not written"), "\(passed.stderr)")
            #expect(heldAccountID(open) == nil)
            #expect(try await testbed.chappie(["accounts", "current"]).stdout == "b\n")
            #expect(try await testbed.chappie(["config", "get", "codex-home"]).stdout == "\n")
        }
    }
}

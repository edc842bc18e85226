import ChappieCore
import ChappieStore
import ChappieTestSupport
import ChappieVault
import Foundation
import GRDB
import Testing

@Suite("chappie accounts, key and config, run as a user runs them", .tags(.slow))
struct AccountsEndToEndTests {
    private func chappie(_ arguments: [String], home: URL, environment: [String: String?] = [:]) async throws -> ProcessResult {
        var environment = environment
        environment["CODEX_HOME"] = environment["CODEX_HOME"] ?? home.appendingPathComponent("codex-default").path
        return try await ChappieRunner(home: home)(arguments, environment: environment)
    }

    private func writeAuth(_ home: URL, _ name: String, email: String, accountID: String, marker: String) throws -> URL {
        let file = home.appendingPathComponent("\(name).json")
        try TestTokens.codexAuthJSON(email: email, accountID: accountID, userID: "user-\(name)", marker: marker).write(to: file)
        return file
    }

    @Test("Import, list, show, rename, switch with a Codex home, current, remove")
    func lifecycle() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-e2e-acc")
        defer { try? FileManager.default.removeItem(at: home) }
        let work = try writeAuth(home, "work", email: "ada@work.example", accountID: "acct-work", marker: "WORKTOKEN")
        let personal = try writeAuth(home, "personal", email: "ada@home.example", accountID: "acct-home", marker: "HOMETOKEN")

        let imported = try await chappie(["accounts", "import", work.path, "--name", "work"], home: home)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.contains("Imported work (ada@work.example, Plus)"))
        #expect(try await chappie(["accounts", "import", personal.path], home: home).status == 0)
        // The same tokens again change nothing, and say so.
        let again = try await chappie(["accounts", "import", work.path], home: home)
        #expect(again.stdout.contains("work (ada@work.example, Plus) is already up to date"), "\(again.stdout)")
        // The same login under a new name: refused, naming the old one, unless --rename (audited).
        let renamed = try await chappie(["accounts", "import", work.path, "--name", "job"], home: home)
        #expect(
            renamed.status == 1 && renamed.stderr.contains("the login chappie has as work") && renamed.stderr.contains("--rename"),
            "\(renamed.stderr)")
        let renaming = try await chappie(["accounts", "import", work.path, "--name", "job", "--rename", "--force"], home: home)
        #expect(renaming.status == 0 && renaming.stdout.contains("Updated job"), "\(renaming.stderr)")
        #expect(try await chappie(["log"], home: home).stdout.contains("renamed"))
        #expect(try await chappie(["accounts", "rename", "job", "work"], home: home).status == 0)

        let list = try await chappie(["accounts", "list", "--json"], home: home)
        #expect(list.status == 0)
        let accounts = JSONDocument(Data(list.stdout.utf8))
        #expect(accounts.array()?.count == 2)
        #expect(accounts.string(0, "name") == "ada")
        #expect(accounts.string(1, "name") == "work")
        #expect(accounts.string(1, "credentials") == "ok")
        for output in [list.stdout, imported.stdout] {
            #expect(!output.contains("WORKTOKEN") && !output.contains("HOMETOKEN"), "a token was printed")
        }

        #expect(try await chappie(["accounts", "rename", "ada", "personal"], home: home).status == 0)
        let codexHome = home.appendingPathComponent("codex-work")
        let switched = try await chappie(["accounts", "switch", "work", "--codex-home", codexHome.path], home: home)
        #expect(switched.status == 0, "\(switched.stderr)")
        #expect(switched.stdout.contains("Active account: work"))
        let authJSON = JSONDocument(try Data(contentsOf: codexHome.appendingPathComponent("auth.json")))
        #expect(authJSON.string("tokens", "refresh_token") == "rt_WORKTOKEN_refresh")
        #expect(try await chappie(["accounts", "current"], home: home).stdout == "work\n")

        let table = try await chappie(["accounts", "list"], home: home)
        #expect(table.stdout.contains("*  work"))
        let show = try await chappie(["accounts", "show", "work"], home: home)
        #expect(show.status == 0)
        #expect(show.stdout.contains("sealed, open with the current key"))

        let refused = try await chappie(["accounts", "remove", "personal"], home: home)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("--yes"))
        #expect(try await chappie(["accounts", "remove", "personal", "--yes"], home: home).status == 0)
        let missing = try await chappie(["accounts", "show", "personal"], home: home)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no account named personal"))

        let log = try await chappie(["log", "--json"], home: home)
        let kinds = (JSONDocument(Data(log.stdout.utf8)).array() ?? []).compactMap { ($0 as? [String: Any])?["kind"] as? String }
        #expect(Array(kinds.prefix(3)) == ["removed", "switched", "renamed"])
        #expect(kinds.filter { $0 == "imported" }.count == 3, "two imports, and the one under --rename")
        #expect(!log.stdout.contains("TOKEN"))
        #expect(try await chappie(["log", "--limit", "2"], home: home).stdout.contains("removed"))
    }

    @Test("The default Codex home setting is used by switch")
    func configCodexHome() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-e2e-cfg")
        defer { try? FileManager.default.removeItem(at: home) }
        let file = try writeAuth(home, "solo", email: "solo@example.com", accountID: "acct-solo", marker: "SOLO")
        #expect(try await chappie(["accounts", "import", file.path], home: home).status == 0)
        let codexHome = home.appendingPathComponent("codex")
        #expect(try await chappie(["config", "set", "codex-home", codexHome.path], home: home).status == 0)
        #expect(try await chappie(["config", "get", "codex-home"], home: home).stdout == codexHome.path + "\n")
        #expect(try await chappie(["accounts", "switch", "solo"], home: home).status == 0)
        #expect(FileManager.default.fileExists(atPath: codexHome.appendingPathComponent("auth.json").path))
        #expect(try await chappie(["config", "get", "codex-home", "--json"], home: home).stdout.contains(codexHome.path))
    }

    @Test("A wrong key exits 78, says so, and changes nothing")
    func wrongKey() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-e2e-key")
        defer { try? FileManager.default.removeItem(at: home) }
        let file = try writeAuth(home, "k", email: "k@example.com", accountID: "acct-k", marker: "KEYTEST")
        #expect(try await chappie(["accounts", "import", file.path], home: home).status == 0)
        let other = home.appendingPathComponent("other.key")
        try KeyFile.write(SecretKey.generate(), to: other)
        let database = home.appendingPathComponent(StoreDatabase.fileName)
        // Every row of every table. (Bytes are no measure: opening a WAL database with GRDB may touch
        // the schema cookie without changing any content.)
        func contents() throws -> String {
            try DatabaseQueue(path: database.path).read { db in
                try ["accounts", "sealed_credentials", "events", "settings", "usage_samples"].map { table in
                    try Row.fetchAll(db, sql: "SELECT * FROM \(table) ORDER BY 1").description
                }.joined(separator: "\n")
            }
        }
        let before = try contents()
        for arguments in [["accounts", "list"], ["accounts", "import", file.path], ["key", "rotate"], ["accounts", "remove", "k", "--yes"]] {
            let result = try await chappie(arguments + ["--key-file", other.path], home: home)
            #expect(result.status == 78, "\(arguments)")
            #expect(result.stderr.contains("does not open this store"))
        }
        #expect(try contents() == before)
        let open = home.appendingPathComponent("open.key")
        try KeyFile.write(SecretKey.generate(), to: open)
        chmod(open.path, 0o644)
        let tooOpen = try await chappie(["accounts", "list", "--key-file", open.path], home: home)
        #expect(tooOpen.status == 78)
        #expect(tooOpen.stderr.contains("chmod 600"))
    }

    @Test("Hostile account names are usage errors that state the rule")
    func hostileNames() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-e2e-names")
        defer { try? FileManager.default.removeItem(at: home) }
        for name in ["a b", "x'; DROP TABLE accounts; --", "new\nline", String(repeating: "n", count: 200), "", "../up"] {
            let result = try await chappie(["accounts", "show", name], home: home)
            #expect(result.status == 2, "\(name.debugDescription)")
            #expect(result.stderr.contains("letters, digits"))
        }
    }

    @Test("A malformed auth.json exits 1 with the reason, and nothing is stored")
    func malformedImport() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-e2e-bad")
        defer { try? FileManager.default.removeItem(at: home) }
        let file = home.appendingPathComponent("auth.json")
        try Data(#"{"tokens":{"id_token":"nope","access_token":"SECRETACCESS","refresh_token":"SECRETREFRESH"}}"#.utf8).write(to: file)
        let result = try await chappie(["accounts", "import", file.path], home: home)
        #expect(result.status == 1)
        #expect(result.stderr.contains("not a JWT"))
        #expect(!result.stderr.contains("SECRET"))
        let list = try await chappie(["accounts", "list", "--json"], home: home)
        #expect(JSONDocument(Data(list.stdout.utf8)).array()?.isEmpty == true)
    }

    @Test("A tampered account is reported as unreadable; the others keep working")
    func tamperedAccount() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-e2e-tamper")
        defer { try? FileManager.default.removeItem(at: home) }
        for name in ["one", "two"] {
            let file = try writeAuth(home, name, email: "\(name)@example.com", accountID: "acct-\(name)", marker: name.uppercased())
            #expect(try await chappie(["accounts", "import", file.path], home: home).status == 0)
        }
        let store = try StoreDatabase.open(at: StoreLocation(directory: home))
            .unlock(with: try KeyFile.read(home.appendingPathComponent("chappie.key")))
        try Self.corruptCredential(of: try await store.account(named: AccountName("one")), home: home)
        let list = try await chappie(["accounts", "list", "--json"], home: home)
        #expect(list.status == 0)
        let json = JSONDocument(Data(list.stdout.utf8))
        #expect(json.string(0, "name") == "one")
        #expect(json.string(0, "credentials") == "unreadable")
        #expect(json.string(1, "credentials") == "ok")
        let show = try await chappie(["accounts", "show", "one"], home: home)
        #expect(show.status == 1)
        #expect(try await chappie(["accounts", "show", "two"], home: home).status == 0)
        #expect(try await chappie(["accounts", "switch", "one", "--codex-home", home.appendingPathComponent("c").path], home: home).status == 1)
        // The first account stored stays the active one: switching to a damaged one changed nothing.
        #expect(try await chappie(["accounts", "current"], home: home).stdout == "one\n")
    }

    /// Overwrites an account's sealed blob, as damage on disk or an attacker would.
    private static func corruptCredential(of account: Account, home: URL) throws {
        try DatabaseQueue(path: home.appendingPathComponent(StoreDatabase.fileName).path).write { db in
            try db.execute(sql: "UPDATE sealed_credentials SET ciphertext = zeroblob(64) WHERE account_id = ?", arguments: [account.id])
        }
    }

    @Test("Killing key rotation at random moments never loses an account")
    func killedRotation() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-e2e-kill")
        defer { try? FileManager.default.removeItem(at: home) }
        let count = 1500
        try await Self.fill(home: home, accounts: count)
        let keyFile = home.appendingPathComponent("chappie.key")
        // One uninterrupted rotation tells how long a rotation takes here.
        let duration = try await Self.timed {
            let rotation = try await self.chappie(["key", "rotate"], home: home)
            #expect(rotation.status == 0)
        }
        let killed = try await Self.killAtRandomMoments(["key", "rotate", "--home", home.path], lasting: duration) { attempt in
            try await expectAllReadable(count: count, home: home, after: attempt)
            #expect(!FileManager.default.fileExists(atPath: keyFile.path + ".new"))
        }
        #expect(killed >= 1, "no rotation was interrupted; the test did not test anything")
    }

    @Test("Killing the upgrade to UUIDs (migration 0004 and the reseal at the first open) at random moments never loses an account")
    func killedReseal() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-e2e-reseal")
        defer { try? FileManager.default.removeItem(at: home) }
        let count = 1500
        let key = try await Self.fill(home: home, accounts: count)
        let database = home.appendingPathComponent(StoreDatabase.fileName)
        // One uninterrupted upgrade (migration, then the reseal) tells how long it takes here.
        try RowBoundCredentials.revertToBeforeIdentities(databaseFile: database, key: key)
        let duration = try await Self.timed {
            let upgrade = try await self.chappie(["accounts", "list", "--json"], home: home)
            #expect(upgrade.status == 0)
        }
        #expect(try RowBoundCredentials.bindings(databaseFile: database) == [2: count])
        let killed = try await Self.killAtRandomMoments(
            ["accounts", "list", "--home", home.path], lasting: duration,
            before: { try RowBoundCredentials.revertToBeforeIdentities(databaseFile: database, key: key) }
        ) { attempt in
            // The reseal is one transaction: all still bound to row ids (migrated or not), or all to
            // UUIDs, never a mix.
            let bindings = try RowBoundCredentials.bindings(databaseFile: database)
            #expect(bindings == [1: count] || bindings == [2: count], "after attempt \(attempt): \(bindings)")
            try await expectAllReadable(count: count, home: home, after: attempt)
            #expect(try RowBoundCredentials.bindings(databaseFile: database) == [2: count])
        }
        let show = try await chappie(["accounts", "show", "u700", "--json"], home: home)
        #expect(show.status == 0, "\(show.stderr)")
        #expect(JSONDocument(Data(show.stdout.utf8)).string("credentials") == "ok")
        #expect(killed >= 1, "no reseal was interrupted; the test did not test anything")
    }

    /// Runs `chappie ARGUMENTS` and kills it (SIGKILL) at a random moment of a run that takes about
    /// `duration` uninterrupted; when one finished first (a loaded machine runs them at varying
    /// speed), aims earlier next time. At most 15 attempts, until 3 were killed; `before` runs
    /// before each attempt and `after` (with the attempt's number) after each.
    ///
    /// - Returns: How many runs were killed.
    private static func killAtRandomMoments(
        _ arguments: [String], lasting duration: Duration, before: () throws -> Void = {}, after: (Int) async throws -> Void
    ) async throws -> Int {
        var killed = 0
        var delay = duration / 2
        for attempt in 0..<15 where killed < 3 {
            try before()
            let process = try ChildProcess(try BuiltProducts.executable("chappie"), arguments)
            try await Task.sleep(for: delay * Double.random(in: 0.5...1.0))
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                killed += 1
            } else {
                delay = max(.milliseconds(5), delay / 2)
            }
            await process.waitUntilExit()
            try await after(attempt)
        }
        return killed
    }

    /// How long `body` takes.
    private static func timed(_ body: () async throws -> Void) async throws -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        try await body()
        return clock.now - start
    }

    /// A store in `home` with the default key file and `count` accounts (`u0`, `u1`, …) holding
    /// made-up tokens. Returns the key.
    @discardableResult
    private static func fill(home: URL, accounts count: Int) async throws -> SecretKey {
        let key = SecretKey.generate()
        try KeyFile.write(key, to: home.appendingPathComponent("chappie.key"))
        let store = try StoreDatabase.open(at: StoreLocation(directory: home)).unlock(with: key)
        for index in 0..<count {
            _ = try await store.save(
                info: ChappieAccountInfo(email: "u\(index)@example.com", userID: "u\(index)", accountID: "a\(index)", plan: .plus),
                credentials: Credentials(idToken: "id\(index)", accessToken: "at\(index)", refreshToken: "rt\(index)"),
                accessTokenExpiresAt: nil, refreshedAt: nil, name: nil, event: .imported)
        }
        return key
    }

    /// `accounts list --json` lists `count` accounts, every one with credentials that open.
    private func expectAllReadable(count: Int, home: URL, after attempt: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let list = try await chappie(["accounts", "list", "--json"], home: home)
        #expect(list.status == 0, "after attempt \(attempt): \(list.stderr)", sourceLocation: sourceLocation)
        let accounts = JSONDocument(Data(list.stdout.utf8)).array() ?? []
        #expect(accounts.count == count, sourceLocation: sourceLocation)
        let unreadable = accounts.compactMap { ($0 as? [String: Any])?["credentials"] as? String }.filter { $0 != "ok" }
        #expect(unreadable.isEmpty, "after attempt \(attempt): \(unreadable.count) unreadable", sourceLocation: sourceLocation)
    }
}

import ChappieStoreFormat
import ChappieCore
import ChappieStore
import ChappieTestSupport
import ChappieVault
import Foundation
import GRDB
import Testing

@Suite("The sealed account store")
struct AccountStoreTests {
    @Test(
        "The embedded migrations are exactly the SQL files in migrations/ and migrations/postgres/ (run `make migrations` after editing)",
        arguments: [("migrations", StoreSchema.migrations), ("migrations/postgres", StoreSchema.postgresMigrations)])
    func migrationsDoNotDrift(folder: String, embedded: [StoreSchema.Migration]) async throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(folder)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(!files.isEmpty)
        #expect(embedded.map(\.id) == files.map { String($0.dropLast(4)) })
        for (migration, file) in zip(embedded, files) {
            let sql = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            #expect(migration.sql.trimmingCharacters(in: .whitespacesAndNewlines) == sql.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    @Test("The directory is 0700 and the database, WAL and shared-memory files 0600")
    func permissions() async throws {
        let test = try TestStore()
        defer { test.remove() }
        try await test.add("ada@example.com", marker: "perm")
        func mode(_ path: String) async throws -> Int {
            try #require((FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue)
        }
        await #expect(try mode(test.location.directory.path) == 0o700)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: test.databaseFile.path + suffix) {
            await #expect(try mode(test.databaseFile.path + suffix) == 0o600, "\(suffix)")
        }
        #expect(FileManager.default.fileExists(atPath: test.databaseFile.path + "-wal"))
    }

    @Test("An existing directory and file that others can read are made private on open")
    func tightensPermissions() async throws {
        let directory = try TestTokens.temporaryDirectory("chappie-open")
        defer { try? FileManager.default.removeItem(at: directory) }
        chmod(directory.path, 0o755)
        let file = directory.appendingPathComponent(StoreDatabase.fileName)
        _ = FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o644])
        _ = try StoreDatabase.open(at: StoreLocation(directory: directory))
        #expect((try FileManager.default.attributesOfItem(atPath: directory.path)[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test("No token appears in the raw bytes of the database or its WAL")
    func noPlaintextOnDisk() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let markers = (0..<5).map { "MARKER\($0)x\(UUID().uuidString.prefix(8))" }
        for (index, marker) in markers.enumerated() { try await test.add("user\(index)@example.com", marker: marker) }
        let bytes = test.rawBytes()
        #expect(bytes.count > 4096)
        for marker in markers {
            #expect(bytes.range(of: Data(marker.utf8)) == nil, "found \(marker) on disk")
        }
        // Sanity: what is stored in clear (the e-mail) is found, so the scan does look.
        #expect(bytes.range(of: Data("user0@example.com".utf8)) != nil)
        let credentials = try await test.store.credentials(for: try await test.store.account(named: AccountName("user0")))
        #expect(credentials.refreshToken == "refresh-\(markers[0])")
    }

    @Test("A wrong key is refused before anything is written")
    func wrongKey() async throws {
        let test = try TestStore()
        defer { test.remove() }
        try await test.add("ada@example.com", marker: "wrong")
        let snapshot = try test.contents()
        do {
            _ = try StoreDatabase.open(at: test.location).unlock(with: SecretKey.generate())
            Issue.record("a wrong key was accepted")
        } catch {
            #expect(error.code == .wrongKey)
            #expect(error.message.contains("nothing was changed"))
        }
        #expect(try test.contents() == snapshot)
        // The right key still works.
        let again = try StoreDatabase.open(at: test.location).unlock(with: test.key)
        await #expect(try again.accounts().count == 1)
    }

    @Test("A tampered blob fails only its own account")
    func tamperedBlob() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let a = try await test.add("a@example.com", marker: "aaa")
        let b = try await test.add("b@example.com", marker: "bbb")
        try await DatabaseQueue(path: test.databaseFile.path).write { db in
            var blob = try #require(try Data.fetchOne(db, sql: "SELECT ciphertext FROM sealed_credentials WHERE account_id = ?", arguments: [a.id]))
            blob[10] ^= 0x01
            try db.execute(sql: "UPDATE sealed_credentials SET ciphertext = ? WHERE account_id = ?", arguments: [blob, a.id])
        }
        await #expect(throws: StoreError.self) { try await test.store.credentials(for: a) }
        #expect(try await test.store.credentials(for: b).refreshToken == "refresh-bbb")
        do {
            _ = try await test.store.credentials(for: a)
        } catch {
            #expect(error.code == .credentialUnreadable)
            #expect(error.message.contains("a"))
        }
    }

    @Test("A blob copied onto another account's row does not open there")
    func movedBlob() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let a = try await test.add("a@example.com", marker: "aaa")
        let b = try await test.add("b@example.com", marker: "bbb")
        try await DatabaseQueue(path: test.databaseFile.path).write { db in
            try db.execute(
                sql: """
                    UPDATE sealed_credentials SET nonce = (SELECT nonce FROM sealed_credentials WHERE account_id = ?1),
                        ciphertext = (SELECT ciphertext FROM sealed_credentials WHERE account_id = ?1) WHERE account_id = ?2
                    """, arguments: [b.id, a.id])
        }
        await #expect(throws: StoreError.self) { try await test.store.credentials(for: a) }
        #expect(try await test.store.credentials(for: b).refreshToken == "refresh-bbb")
    }

    @Test("Key rotation reseals everything; the old key no longer opens the store")
    func rotation() async throws {
        let test = try TestStore()
        defer { test.remove() }
        for index in 0..<10 { try await test.add("u\(index)@example.com", marker: "rot\(index)") }
        let newKey = SecretKey.generate()
        let rotated = try await test.store.rotateKey(to: newKey, passphraseKDF: nil)
        for account in try await rotated.accounts() {
            await #expect(try rotated.credentials(for: account).refreshToken.hasPrefix("refresh-rot"))
        }
        await #expect(try rotated.credentialCountsByKey() == [newKey.id: 10])
        #expect(throws: StoreError.self) { try StoreDatabase.open(at: test.location).unlock(with: test.key) }
        await #expect(try StoreDatabase.open(at: test.location).unlock(with: newKey).accounts().count == 10)
        await #expect(try rotated.events(limit: 1).first?.kind == "key_rotated")
    }

    @Test("A store unlocked before another process rotated the key refuses to seal with the old key")
    func staleKeyAfterRotation() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let account = try await test.add("a@example.com", marker: "stale")
        let other = try StoreDatabase.open(at: test.location).unlock(with: test.key)
        _ = try await other.rotateKey(to: SecretKey.generate(), passphraseKDF: nil)
        #expect(try await test.store.keyIsCurrent() == false)
        await #expect {
            _ = try await test.store.updateCredentials(
                of: account, to: Credentials(idToken: "i", accessToken: "a", refreshToken: "r"), accessTokenExpiresAt: nil,
                refreshedAt: Date(), event: .refreshed)
        } throws: { error in
            (error as? StoreError)?.code == .wrongKey
        }
    }

    @Test("A rotation that fails before commit changes nothing")
    func failedRotation() async throws {
        let test = try TestStore()
        defer { test.remove() }
        try await test.add("a@example.com", marker: "keep")
        struct Interrupted: Error {}
        await #expect(throws: StoreError.self) {
            _ = try await test.store.rotateKey(to: SecretKey.generate(), passphraseKDF: nil, beforeCommit: { throw Interrupted() })
        }
        let reopened = try StoreDatabase.open(at: test.location).unlock(with: test.key)
        #expect(try await reopened.credentials(for: try await reopened.account(named: AccountName("a"))).refreshToken == "refresh-keep")
    }

    @Test("Saving the same ChatGPT account again updates it instead of adding another")
    func upsert() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let first = try await test.add("ada@example.com", accountID: "acct-1", userID: "user-1", marker: "one")
        let second = try await test.add("ada@example.com", accountID: "acct-1", userID: "user-1", marker: "two")
        #expect(first.id == second.id)
        #expect(try await test.store.accounts().count == 1)
        #expect(try await test.store.credentials(for: second).refreshToken == "refresh-two")
        // Same workspace, another user: a different account.
        try await test.add("bob@example.com", accountID: "acct-1", userID: "user-2", marker: "three")
        #expect(try await test.store.accounts().map(\.name.rawValue) == ["ada", "bob"])
        // Same e-mail local part: a unique name is derived.
        try await test.add("ada@other.example", accountID: "acct-2", userID: "user-3", marker: "four")
        #expect(try await test.store.accounts().map(\.name.rawValue) == ["ada", "ada-2", "bob"])
    }

    @Test("Rename, activate and remove, with their audit entries")
    func lifecycle() async throws {
        let test = try TestStore()
        defer { test.remove() }
        try await test.add("ada@example.com", marker: "l1")
        try await test.add("bob@example.com", marker: "l2")
        try await test.store.rename(AccountName("ada"), to: AccountName("work"))
        await #expect(throws: StoreError.self) { try await test.store.rename(AccountName("work"), to: AccountName("bob")) }
        _ = try await test.store.activate(AccountName("work"))
        #expect(try await test.store.activeAccount()?.name.rawValue == "work")
        #expect(try await test.store.accounts().filter(\.isActive).map(\.name.rawValue) == ["work"])
        try await test.store.remove(AccountName("work"))
        #expect(try await test.store.activeAccount() == nil)
        await #expect(throws: StoreError.self) { try await test.store.account(named: AccountName("work")) }
        let kinds = try await test.store.events().map(\.kind)
        #expect(Array(kinds.prefix(3)) == ["removed", "switched", "renamed"])
        #expect(try await test.store.events().first?.accountName == "work")
    }

    @Test("The schema refuses names outside the rule even if inserted behind chappie's back")
    func schemaChecksNames() async throws {
        let test = try TestStore()
        defer { test.remove() }
        for name in ["a b", "", "x'; DROP TABLE accounts; --", "..", String(repeating: "n", count: 65), "new\nline"] {
            #expect(throws: DatabaseError.self) {
                try DatabaseQueue(path: test.databaseFile.path).write { db in
                    try db.execute(
                        sql: "INSERT INTO accounts (name, created_at, updated_at) VALUES (?, '2026-01-01', '2026-01-01')",
                        arguments: [name])
                }
            }
        }
        #expect(try await test.store.accounts().isEmpty)
    }

    @Test("A database from a newer chappie is refused and left untouched")
    func newerSchema() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let queue = try DatabaseQueue(path: test.databaseFile.path)
        try await queue.write { db in try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('9999_from_the_future')") }
        try await queue.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
        let snapshot = try Data(contentsOf: test.databaseFile)
        do {
            _ = try StoreDatabase.open(at: test.location)
            Issue.record("a newer database was opened")
        } catch {
            #expect(error.code == .newerSchema)
        }
        #expect(try Data(contentsOf: test.databaseFile) == snapshot)
    }

    @Test("A file that is not a database is refused and left untouched")
    func corruptFile() async throws {
        let directory = try TestTokens.temporaryDirectory("chappie-corrupt")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent(StoreDatabase.fileName)
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        _ = FileManager.default.createFile(atPath: file.path, contents: garbage, attributes: [.posixPermissions: 0o600])
        do {
            _ = try StoreDatabase.open(at: StoreLocation(directory: directory))
            Issue.record("garbage was opened as a database")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.message.contains(file.path))
        }
        #expect(try Data(contentsOf: file) == garbage)
    }
}

@Suite("An account marked as moving to the team pool")
struct PoolMoveMarkTests {
    @Test("Its tokens are refused with the way out, it is listed as a problem, only the move reads it; unmarked or removed, all is as before")
    func markedAccountIsNotUsed() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let moving = try await test.add("ada@example.com", marker: "moving")
        let other = try await test.add("bob@example.com", marker: "other")
        try await test.store.markMoving(moving)
        try await test.store.markMoving(moving)  // again, as a second run of the move does
        let error = await #expect(throws: StoreError.self) { try await test.store.credentials(for: moving) }
        #expect(error?.code == .moving)
        #expect(error?.message.contains("chappie pool migrate --from-sqlite") == true, "\(error?.message ?? "")")
        #expect(try await test.store.credentialsToMove(moving).refreshToken.contains("moving"))
        // Another account is not affected.
        #expect(try await test.store.credentials(for: other).refreshToken.contains("other"))
        let problems = try await test.store.credentialProblems(of: [moving, other])
        #expect(problems[moving.id]?.contains("being moved to the team pool") == true)
        #expect(problems[other.id] == nil)
        // Nothing new is written to it (a restore, an import, a sign-in would follow it to the pool).
        let credentials = try await test.store.credentialsToMove(moving)
        let update = await #expect(throws: StoreError.self) {
            _ = try await test.store.updateCredentials(of: moving, to: credentials, accessTokenExpiresAt: nil, refreshedAt: Date(), event: .restored)
        }
        #expect(update?.code == .moving)
        let save = await #expect(throws: StoreError.self) {
            _ = try await test.store.save(
                info: moving.info, credentials: credentials, accessTokenExpiresAt: nil, refreshedAt: Date(), name: moving.name, event: .signedIn)
        }
        #expect(save?.code == .moving)
        // The pool refused it: usable again.
        try await test.store.unmarkMoving(moving)
        #expect(try await test.store.credentials(for: moving).refreshToken.contains("moving"))
        // A mark goes with the account.
        try await test.store.markMoving(moving)
        try await test.store.remove(moving.name)
        #expect(try await test.store.movingAccountIDs().isEmpty)
    }
}

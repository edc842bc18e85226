import ChappieStoreFormat
import ChappieCore
import ChappieStore
import ChappieTestSupport
import ChappieVault
import Foundation
import GRDB
import Testing

@Suite("A stable identity per account: UUIDs, and credentials bound to them")
struct AccountIdentityTests {
    @Test("Migration 0004 gives every existing account its own version-4 UUID, which never changes and is required")
    func migrationGivesIdentities() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-uuid")
        defer { try? FileManager.default.removeItem(at: home) }
        let file = home.appendingPathComponent(StoreDatabase.fileName)
        // A store as chappie left it before migration 0004.
        let queue = try DatabaseQueue(path: file.path)
        var migrator = DatabaseMigrator()
        for migration in StoreSchema.migrations.prefix(3) {
            migrator.registerMigration(migration.id) { db in try db.execute(sql: migration.sql) }
        }
        try migrator.migrate(queue)
        try await queue.write { db in
            for name in ["ada", "bob", "cy"] {
                try db.execute(
                    sql: "INSERT INTO accounts (name, created_at, updated_at) VALUES (?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')",
                    arguments: [name])
            }
        }
        try queue.close()

        _ = try StoreDatabase.open(at: StoreLocation(directory: home))
        let reopened = try DatabaseQueue(path: file.path)
        let uuids = try await reopened.read { db in try String.fetchAll(db, sql: "SELECT uuid FROM accounts ORDER BY id") }
        #expect(uuids.count == 3)
        #expect(Set(uuids).count == 3, "every account has its own identity")
        let shape = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
        for uuid in uuids { #expect(uuid.wholeMatch(of: shape) != nil, "\(uuid) is not a lower-case version-4 UUID") }
        await #expect(throws: DatabaseError.self) {
            try await reopened.write { db in
                try db.execute(sql: "UPDATE accounts SET uuid = ? WHERE name = 'ada'", arguments: [UUID().uuidString.lowercased()])
            }
        }
        await #expect(throws: DatabaseError.self) {
            try await reopened.write { db in
                try db.execute(
                    sql: "INSERT INTO accounts (name, created_at, updated_at) VALUES ('dee', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')")
            }
        }
        #expect(try await reopened.read { db in try String.fetchAll(db, sql: "SELECT uuid FROM accounts ORDER BY id") } == uuids)
    }

    @Test("Credentials sealed to row ids still open, and the next open reseals them to the UUIDs in one step; a damaged one is left as it was")
    func rowBoundCredentialsAreResealed() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let accounts = [
            try await test.add("a@example.com", marker: "aaa"), try await test.add("b@example.com", marker: "bbb"),
            try await test.add("c@example.com", marker: "ccc"), try await test.add("d@example.com", marker: "ddd"),
        ]
        #expect(try RowBoundCredentials.downgrade(databaseFile: test.databaseFile, key: test.key) == 4)
        try await DatabaseQueue(path: test.databaseFile.path).write { db in
            try db.execute(sql: "UPDATE sealed_credentials SET ciphertext = zeroblob(64) WHERE account_id = ?", arguments: [accounts[3].id])
        }
        // Before the reseal, the old binding is still read.
        let unresealed = try StoreDatabase.open(at: test.location).unlock(with: test.key)
        #expect(try await unresealed.credentials(for: accounts[0]).refreshToken == "refresh-aaa")
        // Failing at the last moment of its transaction, the reseal changes nothing.
        #expect(throws: StoreError.self) { try unresealed.bindCredentialsToIdentities { throw StoreError(.database, "injected") } }
        #expect(try RowBoundCredentials.bindings(databaseFile: test.databaseFile) == [1: 4])
        #expect(try await unresealed.credentials(for: accounts[1]).refreshToken == "refresh-bbb")

        try KeyFile.write(test.key, to: test.location.defaultKeyFile)
        let options = StoreOptions(home: test.location.directory.path, environment: [:])
        let store = try await StoreOpener.open(options).local!
        #expect(try RowBoundCredentials.bindings(databaseFile: test.databaseFile) == [1: 1, 2: 3])
        for (account, marker) in zip(accounts.prefix(3), ["aaa", "bbb", "ccc"]) {
            #expect(try await store.credentials(for: account).refreshToken == "refresh-\(marker)")
        }
        let problems = try await store.credentialProblems(of: accounts)
        #expect(Array(problems.keys) == [accounts[3].id], "only the damaged blob is unreadable")
        let resealed = try await store.events(limit: 20).filter { $0.knownKind == .credentialsResealed }
        #expect(resealed.map(\.detail) == ["3 credentials bound to their accounts' identities"])

        // Opening again has nothing left to do.
        _ = try await StoreOpener.open(options)
        #expect(try await store.events(limit: 20).filter { $0.knownKind == .credentialsResealed }.count == 1)
        // From now on a row-bound blob (put back by someone who can write the file) does not open.
        try RowBoundCredentials.downgrade(databaseFile: test.databaseFile, key: test.key, asMigrated: false)
        let tampered = try await StoreOpener.open(options).local!
        await #expect(throws: StoreError.self) { try await tampered.credentials(for: accounts[0]) }
    }

    @Test("Tokens waiting in a recovery file written before the upgrade are adopted by the reseal, not lost")
    func resealAdoptsRecoveryFile() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let account = try await test.add("a@example.com", marker: "old")
        try RowBoundCredentials.downgrade(databaseFile: test.databaseFile, key: test.key)
        // A refresh before the upgrade redeemed the token but could not commit: a version-1 file,
        // sealed bound to the row id, naming the row's nonce as what it replaces.
        let baseNonce = try await DatabaseQueue(path: test.databaseFile.path).read { db in
            try Data.fetchOne(db, sql: "SELECT nonce FROM sealed_credentials WHERE account_id = ?", arguments: [account.id])!
        }
        let newer = Credentials(idToken: "id-new", accessToken: "access-new", refreshToken: "refresh-new")
        let box = SealedBox.seal(
            SecretBytes(copying: try JSONEncoder().encode(newer)), key: test.key,
            associatedData: "chappie/credential/v1 account=\(account.id) key=\(test.key.id)")
        let file: [String: Any] = [
            "version": 1, "accountId": account.id, "keyId": test.key.id, "savedAt": Date().timeIntervalSinceReferenceDate,
            "baseNonce": baseNonce.base64EncodedString(), "refreshedAt": Date().timeIntervalSinceReferenceDate,
            "nonce": box.nonce.base64EncodedString(), "ciphertext": box.ciphertext.base64EncodedString(),
        ]
        let recovery = test.location.directory.appendingPathComponent("recovery")
        try FileManager.default.createDirectory(at: recovery, withIntermediateDirectories: true)
        let url = recovery.appendingPathComponent("account-\(account.id).sealed")
        try JSONSerialization.data(withJSONObject: file).write(to: url)
        // The reseal itself (as when opening could not take the account's lock to adopt it first).
        let store = try StoreDatabase.open(at: test.location).unlock(with: test.key)
        #expect(try await store.credentials(for: account) == newer, "a pending file is what reads use")
        #expect(try store.bindCredentialsToIdentities() == 0, "the adopted tokens are sealed bound to the UUID, not resealed")
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(try await store.credentials(for: account) == newer)
        #expect(try RowBoundCredentials.bindings(databaseFile: test.databaseFile) == [2: 1])
        #expect(try await store.events(limit: 10).contains { $0.knownKind == .recovered })
    }

    @Test("A store as an earlier chappie left it opens: migrated, every credential resealed to its account's UUID, all readable")
    func storeFromBeforeIdentities() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let accounts = [try await test.add("a@example.com", marker: "aaa"), try await test.add("b@example.com", marker: "bbb")]
        try KeyFile.write(test.key, to: test.location.defaultKeyFile)
        #expect(try RowBoundCredentials.revertToBeforeIdentities(databaseFile: test.databaseFile, key: test.key) == 2)
        #expect(try RowBoundCredentials.bindings(databaseFile: test.databaseFile) == [1: 2])

        let store = try await StoreOpener.open(StoreOptions(home: test.location.directory.path, environment: [:])).local!
        #expect(try RowBoundCredentials.bindings(databaseFile: test.databaseFile) == [2: 2])
        #expect(!store.acceptsRowBoundCredentials)
        for (account, marker) in zip(accounts, ["aaa", "bbb"]) {
            let reread = try await store.account(named: account.name)
            #expect(reread.uuid != account.uuid, "the migration gives identities anew")
            #expect(try await store.credentials(for: reread).refreshToken == "refresh-\(marker)")
        }
        #expect(try await store.events(limit: 10).contains { $0.detail == "2 credentials bound to their accounts' identities" })
    }

    @Test("A blob bound to one account's UUID does not open for another, even in the same row position")
    func blobBoundToIdentity() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let a = try await test.add("a@example.com", marker: "aaa")
        // Give the account another identity under the trigger's rule: a removed account's row id
        // reused by a new account must not open the old blob.
        let (nonce, ciphertext) = try await DatabaseQueue(path: test.databaseFile.path).read { db in
            let row = try Row.fetchOne(db, sql: "SELECT nonce, ciphertext FROM sealed_credentials WHERE account_id = ?", arguments: [a.id])!
            return (row["nonce"] as Data, row["ciphertext"] as Data)
        }
        try await test.store.remove(a.name)
        let b = try await test.add("b@example.com", marker: "bbb")
        #expect(b.id == a.id, "SQLite reuses the highest row id once it is free")
        #expect(b.uuid != a.uuid)
        try await DatabaseQueue(path: test.databaseFile.path).write { db in
            try db.execute(
                sql: "UPDATE sealed_credentials SET nonce = ?, ciphertext = ? WHERE account_id = ?",
                arguments: [nonce, ciphertext, b.id])
        }
        await #expect(throws: StoreError.self) { try await test.store.credentials(for: b) }
    }
}

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
            try await reopened.write { db in try db.execute(sql: "UPDATE accounts SET uuid = ? WHERE name = 'ada'", arguments: [UUID().uuidString.lowercased()]) }
        }
        await #expect(throws: DatabaseError.self) {
            try await reopened.write { db in
                try db.execute(sql: "INSERT INTO accounts (name, created_at, updated_at) VALUES ('dee', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')")
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
            try db.execute(sql: "UPDATE credentials SET ciphertext = zeroblob(64) WHERE account_id = ?", arguments: [accounts[3].id])
        }
        // Before the reseal, the old binding is still read.
        #expect(try await test.store.credentials(for: accounts[0]).refreshToken == "refresh-aaa")

        try KeyFile.write(test.key, to: test.location.defaultKeyFile)
        let options = StoreOptions(home: test.location.directory.path, environment: [:])
        let store = try await StoreOpener.open(options).store
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
    }

    @Test("A blob bound to one account's UUID does not open for another, even in the same row position")
    func blobBoundToIdentity() async throws {
        let test = try TestStore()
        defer { test.remove() }
        let a = try await test.add("a@example.com", marker: "aaa")
        // Give the account another identity under the trigger's rule: a removed account's row id
        // reused by a new account must not open the old blob.
        let (nonce, ciphertext) = try await DatabaseQueue(path: test.databaseFile.path).read { db in
            let row = try Row.fetchOne(db, sql: "SELECT nonce, ciphertext FROM credentials WHERE account_id = ?", arguments: [a.id])!
            return (row["nonce"] as Data, row["ciphertext"] as Data)
        }
        try await test.store.remove(a.name)
        let b = try await test.add("b@example.com", marker: "bbb")
        #expect(b.id == a.id, "SQLite reuses the highest row id once it is free")
        #expect(b.uuid != a.uuid)
        try await DatabaseQueue(path: test.databaseFile.path).write { db in
            try db.execute(
                sql: "UPDATE credentials SET nonce = ?, ciphertext = ? WHERE account_id = ?",
                arguments: [nonce, ciphertext, b.id])
        }
        await #expect(throws: StoreError.self) { try await test.store.credentials(for: b) }
    }
}

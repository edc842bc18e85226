import ChappieStoreFormat
import ChappieCore
import ChappieStore
import ChappieTestSupport
import Foundation
import GRDB
import Testing

@Suite("Migration 0003: one owner per Codex home")
struct CodexHomeOwnerMigrationTests {
    @Test("A store from before 0003 with several accounts in one Codex home keeps the active account as its owner, else the newest")
    func ownersAfterMigration() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-migration")
        defer { try? FileManager.default.removeItem(at: home) }
        let file = home.appendingPathComponent(StoreDatabase.fileName)
        // The schema as chappie left it before 0003, with the state issue 10 found: every account
        // switched into /codex still names it.
        let old = try DatabaseQueue(path: file.path)
        var migrator = DatabaseMigrator()
        for migration in StoreSchema.migrations where migration.id < "0003" {
            migrator.registerMigration(migration.id) { db in try db.execute(sql: migration.sql) }
        }
        try migrator.migrate(old)
        try await old.write { db in
            for (id, name, codexHome, updated) in [
                (1, "a", "/codex", "2026-11-20 10:00:00.000"), (2, "b", "/codex", "2026-11-20 11:00:00.000"),
                (3, "c", "/codex", "2026-11-20 09:00:00.000"), (4, "d", "/other", "2026-11-20 09:00:00.000"),
                (5, "e", "/third", "2026-11-20 08:00:00.000"), (6, "f", "/third", "2026-11-20 12:00:00.000"),
            ] {
                try db.execute(
                    sql: """
                        INSERT INTO accounts (id, name, is_fedramp, status, codex_home, created_at, updated_at)
                        VALUES (?, ?, 0, 'ok', ?, ?, ?)
                        """,
                    arguments: [id, name, codexHome, updated, updated])
            }
            // c is active: it keeps /codex although b changed last.
            try db.execute(sql: "INSERT INTO settings (key, value) VALUES ('active_account', ?)", arguments: [Data("3".utf8)])
        }
        try old.close()

        _ = try StoreDatabase.open(at: StoreLocation(directory: home, keyDirectory: home))
        let owners = try await DatabaseQueue(path: file.path).read { db in
            try Row.fetchAll(db, sql: "SELECT name, codex_home FROM accounts ORDER BY name").map { row -> String in
                "\(row["name"] as String):\((row["codex_home"] as String?) ?? "-")"
            }
        }
        #expect(owners == ["a:-", "b:-", "c:/codex", "d:/other", "e:-", "f:/third"])
        // And from now on the database itself refuses a second owner.
        #expect(throws: (any Error).self) {
            try DatabaseQueue(path: file.path).write { db in try db.execute(sql: "UPDATE accounts SET codex_home = '/codex' WHERE name = 'a'") }
        }
    }
}

public import ChappieVault
public import Foundation
import GRDB

/// Stores as chappie wrote them before migration 0004: credentials sealed with associated data
/// naming the account's row id (`chappie/credential/v1 account=<row id> key=<key id>`), binding 1,
/// and the setting migration 0004 leaves for them (`row_bound_credentials`).
public enum RowBoundCredentials {
    /// Reseals every credential of the database bound to its row id, as an old chappie would have
    /// left it and migration 0004 found it (each must open bound to its account's UUID now); with
    /// `asMigrated` false, without the setting that says so (a tampered row). Returns how many.
    @discardableResult
    public static func downgrade(databaseFile: URL, key: SecretKey, asMigrated: Bool = true) throws -> Int {
        try DatabaseQueue(path: databaseFile.path).write { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT c.account_id, c.nonce, c.ciphertext, a.uuid FROM sealed_credentials c JOIN accounts a ON a.id = c.account_id
                    WHERE c.binding = 2 AND c.key_id = ?
                    """, arguments: [key.id])
            for row in rows {
                let id: Int64 = row["account_id"]
                let uuid: String = row["uuid"]
                let opened = try SealedBox(nonce: row["nonce"], ciphertext: row["ciphertext"])
                    .open(key: key, associatedData: "chappie/credential/v2 account=\(uuid) key=\(key.id)")
                let box = SealedBox.seal(opened, key: key, associatedData: "chappie/credential/v1 account=\(id) key=\(key.id)")
                try db.execute(
                    sql: "UPDATE sealed_credentials SET nonce = ?, ciphertext = ?, binding = 1 WHERE account_id = ?",
                    arguments: [box.nonce, box.ciphertext, id])
            }
            if asMigrated {
                try db.execute(sql: "INSERT OR REPLACE INTO settings (key, value) VALUES ('row_bound_credentials', X'31')")
            }
            return rows.count
        }
    }

    /// Turns a store back into what chappie left before migration 0004: credentials sealed bound to
    /// row ids in the table `credentials`, no UUIDs, the migration not applied. Returns how many
    /// credentials it holds.
    @discardableResult
    public static func revertToBeforeIdentities(databaseFile: URL, key: SecretKey) throws -> Int {
        let count = try downgrade(databaseFile: databaseFile, key: key, asMigrated: false)
        try DatabaseQueue(path: databaseFile.path).write { db in
            try db.execute(
                sql: """
                    DROP TRIGGER accounts_uuid_required_on_insert;
                    DROP TRIGGER accounts_uuid_is_stable;
                    DROP INDEX accounts_by_uuid;
                    ALTER TABLE accounts DROP COLUMN uuid;
                    ALTER TABLE sealed_credentials DROP COLUMN binding;
                    ALTER TABLE sealed_credentials RENAME TO credentials;
                    DELETE FROM settings WHERE key = 'row_bound_credentials';
                    DELETE FROM grdb_migrations WHERE identifier = '0004_account_uuid';
                    """)
        }
        return count
    }

    /// How many credentials are bound each way: `[1: rowBound, 2: uuidBound]` (all row-bound in a
    /// store from before migration 0004).
    public static func bindings(databaseFile: URL) throws -> [Int: Int] {
        try DatabaseQueue(path: databaseFile.path).read { db in
            guard try db.tableExists("sealed_credentials") else {
                return [1: try Int.fetchOne(db, sql: "SELECT count(*) FROM credentials") ?? 0]
            }
            var counts: [Int: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT binding, count(*) AS n FROM sealed_credentials GROUP BY binding") {
                counts[row["binding"]] = row["n"]
            }
            return counts
        }
    }
}

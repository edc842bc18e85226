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
            let rows = try Row.fetchAll(db, sql: """
                SELECT c.account_id, c.nonce, c.ciphertext, a.uuid FROM credentials c JOIN accounts a ON a.id = c.account_id
                WHERE c.binding = 2 AND c.key_id = ?
                """, arguments: [key.id])
            for row in rows {
                let id: Int64 = row["account_id"]
                let uuid: String = row["uuid"]
                let opened = try SealedBox(nonce: row["nonce"], ciphertext: row["ciphertext"])
                    .open(key: key, associatedData: "chappie/credential/v2 account=\(uuid) key=\(key.id)")
                let box = SealedBox.seal(opened, key: key, associatedData: "chappie/credential/v1 account=\(id) key=\(key.id)")
                try db.execute(
                    sql: "UPDATE credentials SET nonce = ?, ciphertext = ?, binding = 1 WHERE account_id = ?",
                    arguments: [box.nonce, box.ciphertext, id])
            }
            if asMigrated {
                try db.execute(sql: "INSERT OR REPLACE INTO settings (key, value) VALUES ('row_bound_credentials', X'31')")
            }
            return rows.count
        }
    }

    /// How many credentials are bound each way: `[1: rowBound, 2: uuidBound]`.
    public static func bindings(databaseFile: URL) throws -> [Int: Int] {
        try DatabaseQueue(path: databaseFile.path).read { db in
            var counts: [Int: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT binding, count(*) AS n FROM credentials GROUP BY binding") {
                counts[row["binding"]] = row["n"]
            }
            return counts
        }
    }
}

package import ChappieCore
import Foundation
import GRDB

/// The mark `chappie pool migrate` puts on an account before writing it to the team pool
/// (migration 0006): while it is there, ``credentials(for:)`` refuses the account, so a move
/// killed at any moment leaves one usable copy, never two.
extension SQLiteAccountStore {
    /// Marks the account as moving to the pool (again, if an earlier move was cut short), committed
    /// before this returns. Call it holding the account's refresh lock.
    package func markMoving(_ account: Account) async throws(StoreError) {
        try await write { db in
            guard try AccountRecord.fetchOne(db, key: account.id) != nil else {
                throw StoreError(.notFound, "account \(account.name) was removed meanwhile")
            }
            try db.execute(sql: "INSERT OR IGNORE INTO pool_moves (account_id, started_at) VALUES (?, ?)", arguments: [account.id, Date()])
        }
    }

    /// Takes the mark away: the pool refused the account, which stays here and is usable again.
    package func unmarkMoving(_ account: Account) async throws(StoreError) {
        try await write { db in try db.execute(sql: "DELETE FROM pool_moves WHERE account_id = ?", arguments: [account.id]) }
    }

    /// The tokens of an account marked as moving, for the move itself.
    package func credentialsToMove(_ account: Account) async throws(StoreError) -> Credentials {
        try await credentials(for: account, evenIfMoving: true)
    }

    /// The ids of the accounts marked as moving.
    package func movingAccountIDs() async throws(StoreError) -> Set<Int64> {
        Set(try await read { db in try Int64.fetchAll(db, sql: "SELECT account_id FROM pool_moves") })
    }

    /// Inside a write: refuses new tokens for a marked account (a restore, an import, a sign-in):
    /// the move would take them to the pool over newer ones.
    static func refuseIfMoving(_ id: Int64, name: String, _ db: Database) throws {
        if try isMoving(id, db) { throw StoreError(.moving, movingProblem(name)) }
    }

    /// Inside a read or write: whether the account with this id is marked.
    static func isMoving(_ id: Int64, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM pool_moves WHERE account_id = ?", arguments: [id]) ?? false
    }

    /// Why a marked account's tokens are not used here, and what to do.
    static func movingProblem(_ account: Account) -> String {
        movingProblem(account.name.rawValue)
    }

    static func movingProblem(_ name: String) -> String {
        "account \(name) is being moved to the team pool by a `chappie pool migrate` that did not finish, so its tokens are not used here: "
            + "run `chappie pool migrate --from-sqlite` again to finish the move (or, to keep the account here instead, "
            + "remove it and sign it in again: chappie accounts remove \(name) --yes; chappie accounts add \(name))"
    }
}

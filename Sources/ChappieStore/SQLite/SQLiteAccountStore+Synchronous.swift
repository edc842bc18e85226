public import ChappieCore
import GRDB

extension SQLiteAccountStore {
    /// The account with this name, read at once on the calling thread; `nil` when there is none.
    ///
    /// Only for the SDK session's synchronous API (docs/sdk.md: a session restores its account when it
    /// is created); everything else uses the asynchronous ``account(named:)``.
    public func accountNow(named name: AccountName) throws(StoreError) -> Account? {
        try readNow { db in
            try AccountRecord.filter(AccountRecord.Columns.name == name.rawValue).fetchOne(db)?.account(activeID: try Self.activeID(db))
        }
    }

    /// Removes an account at once on the calling thread, as ``remove(_:note:)`` does.
    ///
    /// Only for the SDK session's synchronous `signOut()` (docs/sdk.md).
    public func removeNow(_ name: AccountName) throws(StoreError) {
        let id = try writeNow { db in try Self.deleteAccount(named: name, note: "signed out", db) }
        removeRecoveryFile(for: id)
    }
}

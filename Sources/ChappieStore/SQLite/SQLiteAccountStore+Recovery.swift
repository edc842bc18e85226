public import ChappieCore
import ChappieVault
public import Foundation
import GRDB

/// Tokens a refresh redeemed but could not commit (a database locked past its busy timeout, a full
/// disk, a read-only file): kept sealed in a recovery file so that the account survives, used by
/// every later read until they are adopted into the database, and adopted when the store opens.
extension SQLiteAccountStore {
    /// Where recovery files live: `recovery/` in the data directory (0700).
    public var recoveryDirectory: URL { Self.recoveryDirectory(in: location) }

    /// The recovery files' directory of a store at `location`.
    static func recoveryDirectory(in location: StoreLocation) -> URL { location.directory.appendingPathComponent("recovery") }

    func recoveryURL(for accountID: Int64) -> URL {
        Self.recoveryURL(for: accountID, in: location)
    }

    /// An account's recovery file in a store at `location`.
    static func recoveryURL(for accountID: Int64, in location: StoreLocation) -> URL {
        recoveryDirectory(in: location).appendingPathComponent("account-\(accountID).sealed")
    }

    /// Keeps an account's new tokens in a recovery file, sealed as the database seals them (the
    /// store's key, associated data naming the account's UUID and the key), written 0600 and synced
    /// with its directory. Call it with the account's lock held.
    ///
    /// - Returns: The file.
    /// - Throws: ``StoreError`` `.io` when even this cannot be written.
    @discardableResult
    package func keepForRecovery(
        _ credentials: Credentials, of account: Account, accessTokenExpiresAt: Date?, refreshedAt: Date
    ) async throws(StoreError) -> URL {
        // What the database holds now (a locked or read-only database can still be read).
        let base = try? await read { db in try CredentialRecord.fetchOne(db, key: account.id)?.nonce }
        let url = recoveryURL(for: account.id)
        try RecoveryFile.keep(
            credentials, of: account, key: key, baseNonce: base ?? nil, accessExpiresAt: accessTokenExpiresAt, refreshedAt: refreshedAt, at: url)
        return url
    }

    package func quarantine(_ credentials: Credentials, of account: Account) async throws(StoreError) -> URL {
        try RecoveryFile.quarantine(credentials, of: account, key: key, in: location)
    }

    /// What this account's recovery file is worth against its stored credential row.
    func recoveryState(for account: Account, stored: CredentialRecord?) -> RecoveryState {
        recoveryState(for: account.id, uuid: account.uuid, stored: stored)
    }

    /// What the recovery file of the account with this id and UUID is worth against its stored row.
    func recoveryState(for accountID: Int64, uuid: UUID, stored: CredentialRecord?) -> RecoveryState {
        RecoveryFile.state(
            at: recoveryURL(for: accountID), accountID: accountID, uuid: uuid, key: key, storedNonce: stored?.nonce, storedAt: stored?.updatedAt)
    }

    /// Adopts every pending recovery file into the database, each under its account's lock (an
    /// account whose lock another process holds is left to that process, which reads the file).
    /// Files that are stale (the database has newer tokens) are removed. Nothing is lost when the
    /// database still cannot be written: the files stay, and reads keep using them.
    ///
    /// - Returns: The accounts whose tokens were adopted.
    @discardableResult
    public func adoptRecoveredTokens() -> [AccountName] {
        // Opening the store is synchronous: this runs once, before any operation.
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: recoveryDirectory.path) else { return [] }
        var adopted: [AccountName] = []
        // A slot holds tokens only when its file could not be renamed; an empty one is a reservation.
        let stems = Set(
            names.compactMap { name -> String? in
                let stem = (name as NSString).deletingPathExtension
                guard name.hasSuffix(".sealed") || name.hasSuffix(".slot") else { return nil }
                return RecoveryFile.pendingData(at: recoveryDirectory.appendingPathComponent(stem + ".sealed")) == nil ? nil : stem
            })
        for name in stems where name.hasPrefix("account-") {
            guard let id = Int64(name.dropFirst("account-".count)),
                let lock = try? FileLock.tryAcquire(lockURL(forAccountID: id))
            else { continue }
            if let account = try? adoptRecovery(accountID: id) { adopted.append(account) }
            withExtendedLifetime(lock) {}
        }
        return adopted
    }

    /// Adopts one account's recovery file (its lock held by the caller) in a transaction of its
    /// own, then removes the file if it was settled. Returns the account when it was.
    func adoptRecovery(accountID: Int64) throws(StoreError) -> AccountName? {
        let settled = try writeNow { db in try settleRecovery(accountID: accountID, stored: try CredentialRecord.fetchOne(db, key: accountID), db) }
        // Only a file proven stale, or adopted, is removed; one that does not open stays for a person to see.
        guard let settled else { return nil }
        removeRecoveryFile(for: accountID)
        return try? AccountName(settled)
    }

    /// Inside a write transaction: a pending recovery file's tokens go into the database (sealed with
    /// the store's key; status back to ok; audit entry `recovered`).
    ///
    /// - Returns: The account's name when its file is settled — adopted, or proven stale — and is
    ///   to be removed once the transaction commits; `nil` when there is none.
    /// - Throws: ``StoreError`` `.credentialUnreadable` for a file that does not open (it is kept).
    func settleRecovery(accountID: Int64, stored: CredentialRecord?, _ db: Database) throws -> String? {
        guard var record = try AccountRecord.fetchOne(db, key: accountID) else { return nil }
        guard let uuid = UUID(uuidString: record.uuid) else {
            throw StoreError(.corrupt, "the accounts table has a row chappie cannot read (row \(accountID))")
        }
        switch recoveryState(for: accountID, uuid: uuid, stored: stored) {
        case .none:
            return nil
        case .stale:
            return record.name
        case .unreadable(let reason):
            throw StoreError(.credentialUnreadable, "\(reason); it stays where it is for you to look at, and nothing was changed")
        case .pending(let pending):
            record.storeTokens(accessExpiresAt: pending.accessExpiresAt, refreshedAt: pending.refreshedAt)
            try record.update(db)
            try seal(pending.credentials, of: record, db)
            try db.record(.recovered, account: record, detail: "tokens a refresh could not store were adopted from the recovery file")
            return record.name
        }
    }

    /// Removes an account's recovery file once the database holds tokens at least as new.
    func removeRecoveryFile(for accountID: Int64) {
        RecoveryFile.remove(at: recoveryURL(for: accountID))
    }

    package func reserveRecovery(for account: Account) async throws(StoreError) {
        try RecoveryFile.reserveSlot(for: recoveryURL(for: account.id))
    }
}

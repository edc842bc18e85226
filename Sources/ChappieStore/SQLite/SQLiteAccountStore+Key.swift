import ChappieCore
public import ChappieVault
public import Foundation
import GRDB

extension SQLiteAccountStore {
    /// The key lock (``StoreLocation/keyLockFile``).
    public var keyLockURL: URL { location.keyLockFile }

    /// A local store's key changes only by a rotation here, which every process takes up.
    public var keyChangesElsewhere: Bool { false }

    public func keyIsCurrent() async throws(StoreError) -> Bool {
        let id = key.id
        return try await read { db in try db.setting(.keyID).map { String(decoding: $0, as: UTF8.self) } == id }
    }

    nonisolated(nonsending) public func withKeyHeld<T>(_ body: () async throws -> T) async throws -> T {
        let lock = try await FileLock.acquire(keyLockURL, mode: .shared)
        defer { withExtendedLifetime(lock) {} }
        try await reloadKeyIfRotated(holdingKeyLock: true)
        return try await body()
    }

    /// Reads the key again when another process rotated it, so that a long-lived store (a command
    /// that opened the store just before a rotation committed) goes on with the new key instead of
    /// failing. Waits for a rotation in progress to finish (the key lock, shared).
    ///
    /// - Parameter holdingKeyLock: Whether the caller already holds the key lock.
    /// - Returns: Whether the key changed.
    /// - Throws: ``StoreError`` `.wrongKey` when the store's key changed and cannot be read again
    ///   (a passphrase, or a key file that does not hold it).
    @discardableResult
    public func reloadKeyIfRotated(holdingKeyLock: Bool = false) async throws(StoreError) -> Bool {
        guard try await !keyIsCurrent() else { return false }
        guard let keySource else {
            throw StoreError(.wrongKey, "the store's key was changed by another chappie process; run the command again with the new passphrase")
        }
        let lock: FileLock?
        do {
            lock = holdingKeyLock ? nil : try await FileLock.acquire(keyLockURL, mode: .shared)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.io, "waiting for the key lock was cancelled")
        }
        defer { withExtendedLifetime(lock) {} }
        let check = try await read { db in try db.setting(.keyCheck) }
        guard let newKey = try? keySource(), let check, KeyCheck.verify(check, key: newKey) else {
            throw StoreError(
                .wrongKey, "the store's key was changed by another chappie process, and the key file does not hold the new key; nothing was changed")
        }
        replaceKey(with: newKey)
        return true
    }

    /// Records (or with `nil` clears) the id of the key a rotation is about to commit.
    func setPendingKeyID(_ id: String?) async throws(StoreError) {
        try await write { db in try db.setSetting(.pendingKeyID, id.map { Data($0.utf8) }) }
    }

    /// Reseals every credential and the key check under a new key, in one transaction: either all
    /// of it happens or none. Call it holding the key lock exclusive.
    ///
    /// - Parameters:
    ///   - newKey: The key to seal with from now on.
    ///   - passphraseKDF: The parameters when the new key comes from a passphrase, else `nil`.
    ///   - beforeCommit: Runs inside the transaction after everything is resealed; if it throws,
    ///     nothing changes.
    /// - Throws: ``StoreError`` `.credentialUnreadable` (nothing changed) if a credential does not
    ///   open with the current key.
    /// - Returns: The store unlocked with the new key.
    public func rotateKey(
        to newKey: SecretKey, passphraseKDF: PassphraseKDF?, beforeCommit: @escaping @Sendable () throws -> Void = {}
    ) async throws(StoreError) -> SQLiteAccountStore {
        let oldKey = key
        let settled = try await write { db in
            // Tokens waiting in recovery files are adopted first, under the old key, so that they are
            // what gets resealed; one that cannot be opened stops the rotation, since after it
            // nothing could ever open it.
            var settled: [Int64] = []
            for record in try CredentialRecord.fetchAll(db) {
                if try self.settleRecovery(accountID: record.accountId, stored: record, db) != nil { settled.append(record.accountId) }
            }
            for record in try CredentialRecord.fetchAll(db) where try !self.reseal(record, from: oldKey, to: newKey, updatedAt: Date(), db) {
                let name = try AccountRecord.fetchOne(db, key: record.accountId)?.name ?? "?"
                throw StoreError(
                    .credentialUnreadable,
                    "account \(name)'s credentials do not open with the current key, so the key was not rotated; remove or sign in that account first"
                )
            }
            try db.setSetting(.keyCheck, KeyCheck.make(key: newKey))
            try db.setSetting(.keyID, Data(newKey.id.utf8))
            try db.setSetting(.pendingKeyID, nil)
            try db.setSetting(.rowBoundCredentials, nil)
            try db.setSetting(.passphraseKDF, try passphraseKDF.map { try JSONEncoder().encode($0) })
            try db.record(.keyRotated, account: nil, detail: "key \(oldKey.id) → \(newKey.id)")
            try beforeCommit()
            return settled
        }
        for id in settled { removeRecoveryFile(for: id) }
        replaceKey(with: newKey)
        stopAcceptingRowBoundCredentials()
        return SQLiteAccountStore(database: database, key: newKey, keySource: keySource, acceptsRowBoundCredentials: false)
    }

    /// Binds credentials sealed to the row id (stores before migration 0004) to the accounts' UUIDs,
    /// all in one transaction, under the key that proved itself at unlock: either every one is
    /// resealed or none. Call it holding the key lock exclusive (as a rotation does), so that no
    /// refresh is between redemption and commit. Tokens waiting in recovery files are adopted first,
    /// in the same transaction (so they are what gets resealed); a recovery file that does not open
    /// stops it, and nothing changes. A blob that does not open (damaged, or sealed by another key)
    /// is left exactly as it was: it was unreadable before, and stays so.
    ///
    /// - Parameter beforeCommit: Runs inside the transaction after everything is resealed; if it
    ///   throws, nothing changes.
    /// - Returns: How many credentials were resealed.
    @discardableResult
    public func bindCredentialsToIdentities(beforeCommit: @escaping @Sendable () throws -> Void = {}) throws(StoreError) -> Int {
        let key = self.key
        let (resealed, settled) = try writeNow { db in
            // Another process may have done it since this one looked, or rotated the key (which
            // reseals everything too).
            guard try db.setting(.rowBoundCredentials) != nil, try db.setting(.keyID) == Data(key.id.utf8) else { return (0, [Int64]()) }
            var settled: [Int64] = []
            let rowBound = try CredentialRecord.filter(CredentialRecord.Columns.binding == CredentialBinding.rowID).fetchAll(db)
            for record in rowBound where try self.settleRecovery(accountID: record.accountId, stored: record, db) != nil {
                settled.append(record.accountId)
            }
            var resealed = 0
            for record in try CredentialRecord.filter(CredentialRecord.Columns.binding == CredentialBinding.rowID).fetchAll(db)
            where try record.keyId == key.id && self.reseal(record, from: key, to: key, updatedAt: record.updatedAt, db) {
                resealed += 1
            }
            try db.setSetting(.rowBoundCredentials, nil)
            try db.record(.credentialsResealed, account: nil, detail: "\(resealed) credentials bound to their accounts' identities")
            try beforeCommit()
            return (resealed, settled)
        }
        stopAcceptingRowBoundCredentials()
        for id in settled { removeRecoveryFile(for: id) }
        return resealed
    }

    /// Inside a write transaction: opens one credential row with `oldKey` (by the binding it was
    /// sealed with) and seals it again with `newKey`, bound to its account's UUID.
    ///
    /// - Returns: `false` when the row does not open (it is left as it was).
    private func reseal(_ record: CredentialRecord, from oldKey: SecretKey, to newKey: SecretKey, updatedAt: Date, _ db: Database) throws -> Bool {
        guard let account = try AccountRecord.fetchOne(db, key: record.accountId), let uuid = UUID(uuidString: account.uuid),
            let opened = try? open(record, uuid: uuid, key: oldKey)
        else { return false }
        let box = SealedBox.seal(
            opened, key: newKey, associatedData: CredentialBinding.uuid.associatedData(accountID: record.accountId, uuid: uuid, keyID: newKey.id))
        try CredentialRecord(
            accountId: record.accountId, keyId: newKey.id, nonce: box.nonce, ciphertext: box.ciphertext, updatedAt: updatedAt, binding: .uuid
        ).update(db)
        return true
    }
}

import ChappieVault
public import Foundation
import GRDB

extension AccountStore {
    /// The key lock (``StoreLocation/keyLockFile``).
    public var keyLockURL: URL { location.keyLockFile }

    /// Reads the key again when another process rotated it, so that a long-lived store (a command
    /// that opened the store just before a rotation committed) goes on with the new key instead of
    /// failing. Waits for a rotation in progress to finish (the key lock, shared).
    ///
    /// - Parameter holdingKeyLock: Whether the caller already holds the key lock (shared).
    /// - Returns: Whether the key changed.
    /// - Throws: ``StoreError`` `.wrongKey` when the store's key changed and cannot be read again
    ///   (a passphrase, or a key file that does not hold it).
    @discardableResult
    public func reloadKeyIfRotated(holdingKeyLock: Bool = false) throws(StoreError) -> Bool {
        guard try !keyIsCurrent() else { return false }
        guard let keySource else {
            throw StoreError(.wrongKey, "the store's key was changed by another chappie process; run the command again with the new passphrase")
        }
        let lock = holdingKeyLock ? nil : try FileLock.acquireBlocking(keyLockURL, mode: .shared)
        defer { withExtendedLifetime(lock) {} }
        let check = try read { db in try db.setting(.keyCheck) }
        guard let newKey = try? keySource(), let check, KeyCheck.verify(check, key: newKey) else {
            throw StoreError(
                .wrongKey, "the store's key was changed by another chappie process, and the key file does not hold the new key; nothing was changed")
        }
        replaceKey(with: newKey)
        return true
    }

    /// Records (or with `nil` clears) the id of the key a rotation is about to commit.
    func setPendingKeyID(_ id: String?) throws(StoreError) {
        try write { db in try db.setSetting(.pendingKeyID, id.map { Data($0.utf8) }) }
    }
}

import ChappieVault
public import Foundation

/// Replaces the store's key without a moment where the data and the key on disk disagree, and
/// without a moment where another process can see them disagree.
///
/// A rotation holds the key lock (`locks/key.lock`) exclusive from start to end; every open of the
/// store reads the key holding it shared, and a refresh holds it shared from redemption to commit.
/// For a key file: the new key's id is recorded in the database as pending, the new key is written
/// to `<file>.new` (0600, synced), every credential is resealed in one transaction (which clears the
/// pending id), then `<file>.new` is renamed over the key file. A crash before the commit leaves the
/// old key valid (the next open, under the lock, discards `.new`); a crash after it leaves `.new`
/// holding the valid key, which the next open moves into place.
public enum KeyRotation {
    /// What a rotation did.
    public struct Outcome: Sendable {
        /// The previous key id.
        public let oldKeyID: String
        /// The new key id.
        public let newKeyID: String
        /// The store, unlocked with the new key.
        public let store: SQLiteAccountStore
    }

    /// Why a team pool's key is not rotated by `chappie key rotate`, and how to change it instead.
    static let poolRotationRefused = StoreError(
        .poolAddress,
        """
        chappie does not rotate a team pool's key: every machine would have to take up the new key at the same moment. \
        To change it: stop chappie on every machine; `chappie backup -o FILE` here; create a new, empty pool database; \
        give every machine the new key file (systemd credential); `chappie --store NEW-URL --key-file NEW-KEY restore FILE`; \
        then point the machines at the new pool (team-pool.md in share/doc/chappie, "Rotating the key"). Nothing was changed.
        """)

    /// The file a rotation writes the new key to before committing.
    public static func pendingURL(for keyFile: URL) -> URL {
        keyFile.deletingLastPathComponent().appendingPathComponent(keyFile.lastPathComponent + ".new")
    }

    /// Rotates the key of an open store, keeping its kind of source.
    ///
    /// - Throws: ``VaultError`` for a systemd credential (chappie cannot rewrite it), or the errors
    ///   of resealing (then nothing changed).
    public static func rotate(_ opened: StoreOpener.Opened, options: StoreOptions) async throws -> Outcome {
        guard let store = opened.local else { throw poolRotationRefused }
        switch opened.source {
        case .systemdCredential(let url):
            throw VaultError(
                .keyFile,
                "the key comes from the systemd credential \(url.path), which chappie cannot change; to rotate, run with --key-file pointing at a key file you own"
            )
        case .keyFile(let url), .defaultKeyFile(let url):
            let lock = try await FileLock.acquire(store.keyLockURL, mode: .exclusive)
            defer { withExtendedLifetime(lock) {} }
            try await store.reloadKeyIfRotated(holdingKeyLock: true)
            let oldKeyID = store.key.id
            let newKey = SecretKey.generate()
            let pending = pendingURL(for: url)
            try await store.setPendingKeyID(newKey.id)
            try KeyFile.write(newKey, to: pending)
            let rotated: SQLiteAccountStore
            do {
                // Not cancellable: once resealing starts, it commits or rolls back as a whole.
                rotated = try await Task { try await store.rotateKey(to: newKey, passphraseKDF: nil) }.value
            } catch {
                try? FileManager.default.removeItem(at: pending)
                try? await store.setPendingKeyID(nil)
                throw error
            }
            try moveIntoPlace(pending, url)
            return Outcome(oldKeyID: oldKeyID, newKeyID: newKey.id, store: rotated)
        case .passphrase:
            // Asked before taking the lock: nobody waits while the user types.
            let passphrase = try StoreOpener.passphrase(
                options, fromEnvironment: options.newPassphrase != nil || options.environment["CHAPPIE_NEW_PASSPHRASE"] != nil, confirm: true,
                variable: "CHAPPIE_NEW_PASSPHRASE")
            let kdf = PassphraseKDF.fresh()
            let newKey = try kdf.deriveKey(from: passphrase)
            let lock = try await FileLock.acquire(store.keyLockURL, mode: .exclusive)
            defer { withExtendedLifetime(lock) {} }
            let oldKeyID = store.key.id
            let rotated = try await Task { try await store.rotateKey(to: newKey, passphraseKDF: kdf) }.value
            return Outcome(oldKeyID: oldKeyID, newKeyID: newKey.id, store: rotated)
        }
    }

    /// Opens a store whose key file has a `.new` beside it, holding the key lock exclusive (so no
    /// rotation is in progress): the rotation committed when the store's key is the pending one
    /// (move it into place), else it never did (discard it).
    static func recover(_ database: StoreDatabase, keyFile: URL, pending: URL) throws -> SQLiteAccountStore {
        let source: @Sendable () throws -> SecretKey = { try KeyFile.read(keyFile) }
        if let newKey = try? KeyFile.read(pending), case .key(let id) = database.currentKeySetup(), id == newKey.id {
            let store = try database.unlock(with: newKey, keySource: source)
            // The rotation committed but the rename did not happen: finish it.
            try moveIntoPlace(pending, keyFile)
            return store
        }
        // The rotation never committed: the new key was never used.
        let store = try database.unlock(with: try KeyFile.read(keyFile), keySource: source)
        try? FileManager.default.removeItem(at: pending)
        try? store.writeNow { db in try db.setSetting(.pendingKeyID, nil) }
        return store
    }

    private static func moveIntoPlace(_ pending: URL, _ keyFile: URL) throws(VaultError) {
        do {
            try PrivateFile.move(pending, over: keyFile)
        } catch {
            throw VaultError(
                .keyFile,
                "the store now uses the key in \(pending.path), but it could not be renamed to \(keyFile.path): rename it by hand")
        }
    }
}

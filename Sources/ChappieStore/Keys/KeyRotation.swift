public import ChappieVault
public import Foundation

/// Replaces the store's key without a moment where the data and the key on disk disagree.
///
/// For a key file: the new key is written to `<file>.new` (0600, synced), then every credential is
/// resealed in one transaction, then `<file>.new` is renamed over the key file. A crash before the
/// commit leaves the old key valid (and `.new` is discarded on the next open); a crash after it
/// leaves `.new` holding the valid key, which the next open moves into place.
public enum KeyRotation {
    /// What a rotation did.
    public struct Outcome: Sendable {
        /// The previous key id.
        public let oldKeyID: String
        /// The new key id.
        public let newKeyID: String
        /// The store, unlocked with the new key.
        public let store: AccountStore
    }

    /// The file a rotation writes the new key to before committing.
    public static func pendingURL(for keyFile: URL) -> URL {
        keyFile.deletingLastPathComponent().appendingPathComponent(keyFile.lastPathComponent + ".new")
    }

    /// Rotates the key of an open store, keeping its kind of source.
    ///
    /// - Throws: ``VaultError`` for a systemd credential (chappie cannot rewrite it), or the errors
    ///   of resealing (then nothing changed).
    public static func rotate(_ opened: StoreOpener.Opened, options: StoreOptions) throws -> Outcome {
        let oldKeyID = opened.store.key.id
        switch opened.source {
        case .systemdCredential(let url):
            throw VaultError(
                .keyFile,
                "the key comes from the systemd credential \(url.path), which chappie cannot change; to rotate, run with --key-file pointing at a key file you own")
        case .keyFile(let url), .defaultKeyFile(let url):
            let newKey = SecretKey.generate()
            let pending = pendingURL(for: url)
            try KeyFile.write(newKey, to: pending)
            let store: AccountStore
            do {
                store = try opened.store.rotateKey(to: newKey, passphraseKDF: nil)
            } catch {
                try? FileManager.default.removeItem(at: pending)
                throw error
            }
            try moveIntoPlace(pending, url)
            return Outcome(oldKeyID: oldKeyID, newKeyID: newKey.id, store: store)
        case .passphrase:
            let passphrase = try StoreOpener.passphrase(
                options, fromEnvironment: options.environment["CHAPPIE_NEW_PASSPHRASE"] != nil, confirm: true,
                variable: "CHAPPIE_NEW_PASSPHRASE")
            let kdf = PassphraseKDF.fresh()
            let newKey = try kdf.deriveKey(from: passphrase)
            let store = try opened.store.rotateKey(to: newKey, passphraseKDF: kdf)
            return Outcome(oldKeyID: oldKeyID, newKeyID: newKey.id, store: store)
        }
    }

    /// Opens a store whose key file has a `.new` beside it: whichever key opens the store wins.
    static func recover(_ database: StoreDatabase, keyFile: URL, pending: URL) throws -> AccountStore {
        if let current = try? KeyFile.read(keyFile), let store = try? database.unlock(with: current) {
            // The rotation never committed: the new key was never used.
            try? FileManager.default.removeItem(at: pending)
            return store
        }
        let newKey = try KeyFile.read(pending)
        let store = try database.unlock(with: newKey)
        // The rotation committed but the rename did not happen: finish it.
        try moveIntoPlace(pending, keyFile)
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

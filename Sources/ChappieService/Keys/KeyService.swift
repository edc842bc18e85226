import ChappieStore
import ChappieVault
import Foundation

/// The store's key (`chappie key …`): where it comes from, what it seals, and its rotation.
public struct KeyService: Sendable {
    /// What `chappie key status` shows. Never the key itself.
    public struct Status: Sendable, Codable {
        /// Where the key comes from (a key file's path, a systemd credential, a passphrase).
        public var source: String
        /// The key's id (a hash, not the key).
        public var keyID: String
        /// How a passphrase-derived key is stretched ("Argon2id, 3 passes, 256 MiB"), else `nil`.
        public var derivation: String?
        /// Credentials sealed with this key.
        public var credentialsSealedWithKey: Int
        /// Credentials sealed with any other key (unreadable).
        public var credentialsSealedWithOtherKeys: Int
        /// The data directory.
        public var dataDirectory: String
    }

    /// What a rotation did.
    public struct Rotation: Sendable {
        /// The previous key id.
        public var oldKeyID: String
        /// The new key id.
        public var newKeyID: String
    }

    private let opened: StoreOpener.Opened
    private let options: StoreOptions

    init(opened: StoreOpener.Opened, options: StoreOptions) {
        self.opened = opened
        self.options = options
    }

    /// Where the key comes from and how many credentials it seals.
    public func status() async throws -> Status {
        let counts = try await opened.store.credentialCountsByKey()
        let keyID = opened.store.key.id
        var derivation: String?
        if case .passphrase(let kdf, _) = opened.setup { derivation = "Argon2id, \(kdf.opsLimit) passes, \(kdf.memLimit >> 20) MiB" }
        return Status(
            source: opened.source.description, keyID: keyID, derivation: derivation, credentialsSealedWithKey: counts[keyID] ?? 0,
            credentialsSealedWithOtherKeys: counts.filter { $0.key != keyID }.values.reduce(0, +),
            dataDirectory: opened.store.location.directory.path)
    }

    /// Replaces the key, resealing every credential in one transaction (``KeyRotation``).
    public func rotate() async throws -> Rotation {
        let outcome = try await KeyRotation.rotate(opened, options: options)
        return Rotation(oldKeyID: outcome.oldKeyID, newKeyID: outcome.newKeyID)
    }
}

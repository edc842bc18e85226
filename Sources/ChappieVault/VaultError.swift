/// A failure of sealing, opening or key handling. Messages name files and rules, never secrets.
public struct VaultError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure.
    public enum Kind: Sendable, Equatable {
        /// Bytes that should be a key are not one.
        case invalidKey
        /// A sealed value did not open: wrong key, tampered, or moved to another record.
        case openFailed
        /// Key derivation failed (usually: not enough memory for Argon2id).
        case derivationFailed
        /// A key file is missing, unreadable, or readable by others.
        case keyFile
        /// No passphrase could be had.
        case passphraseUnavailable
        /// A file holding a secret (a passphrase, a token, the pool's address) is missing,
        /// unreadable, too long, or not private to this user.
        case secretFile
        /// A private file could not be written or moved into place (a full disk, a directory in
        /// its place): not a key problem unless the file is the key.
        case writeFailed
    }

    /// What kind of failure.
    public let kind: Kind
    /// What happened and how to fix it.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

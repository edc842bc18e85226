public import ChappieCore

/// A failure of sealing, opening or key handling. Messages name files and rules, never secrets.
public struct VaultError: ChappieFailure {
    /// What kind of failure.
    public enum Code: Sendable, Equatable {
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
    public let code: Code
    /// What happened and how to fix it.
    public let message: String
    /// The error underneath, when there is one.
    public let underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// A file that could not be written is a failure of its own; every other is the key's or the
    /// set-up's, to be fixed.
    public var recovery: ChappieErrorRecovery {
        code == .writeFailed ? .permanent(.inspectCause) : .permanent(.fixConfiguration)
    }
}

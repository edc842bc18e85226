/// A failure of an account operation that is not the store's own (``StoreError``) or the vault's
/// (``VaultError``): bad input files, key sources that cannot be used, Codex homes that cannot be
/// written. Messages never contain a secret.
public struct ServiceError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure, which decides the exit code.
    public enum Kind: Sendable, Equatable {
        /// The input (a file, an argument) is not usable.
        case invalidInput
        /// Configuration or key problem.
        case configuration
        /// The user declined or input was needed but there was no terminal.
        case cancelled
        /// The service answered with a status that passes (a 5xx, 429): try again later.
        case unavailable
        /// No account can do it until one is signed in (again).
        case signInRequired
    }

    /// What kind of failure.
    public let kind: Kind
    /// What happened and what to do.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

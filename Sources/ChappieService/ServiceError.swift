public import ChappieCore

/// A failure of an account operation that is not the store's own (``StoreError``) or the vault's
/// (``VaultError``): bad input files, key sources that cannot be used, Codex homes that cannot be
/// written. Messages never contain a secret.
public struct ServiceError: ChappieFailure {
    /// What kind of failure, which decides the recovery (and so the exit code).
    public enum Code: Sendable, Equatable {
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
        /// It failed for a reason the message gives (a refusal carried over from another error).
        case failed
    }

    /// What kind of failure.
    public let code: Code
    /// What happened and what to do.
    public let message: String
    /// The error underneath, when there is one.
    public let underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var recovery: ChappieErrorRecovery {
        switch code {
        case .configuration: .permanent(.fixConfiguration)
        case .unavailable: .retry(.now)
        case .signInRequired: .signInAgain
        case .invalidInput, .cancelled, .failed: .permanent(.inspectCause)
        }
    }
}

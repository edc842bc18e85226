/// The one shape of the libraries' own errors (the store's, the vault's, the services'): a code of
/// the library's own, a message that says what happened and what to do (never a secret), the error
/// underneath when there is one, and how to recover. The recovery is the SDK's one triage
/// (``ChappieErrorRecovery``), so the command line maps every error to an exit code in one place.
public protocol ChappieFailure: ChappieRecoverableError, Sendable, CustomStringConvertible {
    /// What happened and what to do.
    var message: String { get }
    /// What a person or a program can do about it.
    var recovery: ChappieErrorRecovery { get }
    /// The error underneath (a system call's, a database driver's), when there is one.
    var underlying: (any Error & Sendable)? { get }
}

extension ChappieFailure {
    /// The message.
    public var description: String { message }
}

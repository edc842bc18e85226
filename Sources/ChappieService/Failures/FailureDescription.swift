public import Chappie
public import ChappieCore
import ChappieStore
import ChappieVault

/// What an error of chappie's libraries means for a person and a script: a message and an exit
/// code (design.md, Errors) — the one mapping the command line and the daemon's socket use.
public struct FailureDescription: Sendable, Equatable {
    /// chappie's exit codes, on top of 0 (success), 1 (failure) and 2 (usage).
    public enum ExitCode {
        /// Any other failure.
        public static let failure: Int32 = 1
        /// A wrong argument.
        public static let usage: Int32 = 2
        /// A service did not answer or answered wrongly (EX_UNAVAILABLE).
        public static let serviceUnavailable: Int32 = 69
        /// Try again later (EX_TEMPFAIL).
        public static let temporaryFailure: Int32 = 75
        /// An account must be signed in again (EX_NOPERM).
        public static let signInRequired: Int32 = 77
        /// A configuration or key problem (EX_CONFIG).
        public static let configuration: Int32 = 78
    }

    /// What happened and what to do.
    public var message: String
    /// The exit code.
    public var exitCode: Int32

    /// Creates a description.
    public init(message: String, exitCode: Int32) {
        self.message = message
        self.exitCode = exitCode
    }

    /// The description of an error chappie's libraries throw; `nil` for any other.
    public init?(_ error: any Error) {
        switch error {
        case let error as StoreError:
            self.init(message: error.message, exitCode: error.isConfigurationProblem ? ExitCode.configuration : ExitCode.failure)
        case let error as VaultError:
            self.init(message: error.message, exitCode: ExitCode.configuration)
        case let error as ChappieAuthError:
            self.init(message: (error.errorDescription ?? "\(error)") + Self.advice(error.recovery), exitCode: error.recovery.exitCode)
        case let error as ChappieClientError:
            self.init(message: (error.errorDescription ?? "\(error)") + Self.advice(error.recovery), exitCode: error.recovery.exitCode)
        case let error as ServiceError:
            self.init(message: error.message, exitCode: error.kind == .configuration ? ExitCode.configuration : ExitCode.failure)
        case let error as AccountNameError:
            self.init(message: error.description, exitCode: ExitCode.usage)
        default:
            return nil
        }
    }

    /// What the user can do, as a sentence to append.
    static func advice(_ recovery: ChappieErrorRecovery) -> String {
        switch recovery {
        case .signInAgain: " Sign the account in again: chappie accounts add NAME"
        case .retry: " Try again later."
        case .permanent: ""
        }
    }
}

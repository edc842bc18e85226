import ArgumentParser
import ChappieCore
import ChappieService
import ChappieStore
import ChappieVault

/// A library error turned into a message and an exit code (design.md, Errors).
struct CommandFailure: Error {
    let message: String
    let exitCode: ExitCode

    init(message: String, exitCode: ExitCode) {
        self.message = message
        self.exitCode = exitCode
    }

    /// The failure for an error chappie's libraries throw; `nil` for others (argument-parser's own).
    init?(_ error: any Error) {
        switch error {
        case let error as StoreError:
            self.init(message: error.message, exitCode: error.isConfigurationProblem ? ExitStatus.configuration : .failure)
        case let error as VaultError:
            self.init(message: error.message, exitCode: ExitStatus.configuration)
        case let error as ChappieAuthError:
            self.init(message: (error.errorDescription ?? "\(error)") + Self.advice(error.recovery), exitCode: Self.exitCode(error.recovery))
        case let error as ChappieClientError:
            self.init(message: (error.errorDescription ?? "\(error)") + Self.advice(error.recovery), exitCode: Self.exitCode(error.recovery))
        case let error as ServiceError:
            self.init(message: error.message, exitCode: error.kind == .configuration ? ExitStatus.configuration : .failure)
        default:
            return nil
        }
    }

    /// The exit code for a recovery class: 77 sign in again, 75 retry later, 1 otherwise.
    static func exitCode(_ recovery: ChappieErrorRecovery) -> ExitCode {
        ExitCode(recovery.exitCode)
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

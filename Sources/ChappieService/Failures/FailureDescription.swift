import Chappie
public import ChappieCore
import ChappieDaemonClient
import Foundation
import ChappieNet
import ChappieStore
import ChappieVault

/// What an error of chappie's libraries means for a person and a script: a message and an exit
/// code (docs/errors.md) — the one mapping the command line and the daemon's socket use.
public struct FailureDescription: Sendable, Equatable {
    /// What happened and what to do.
    public var message: String
    /// The exit code.
    public var exitCode: Int32

    /// Creates a description.
    public init(message: String, exitCode: Int32) {
        self.message = message
        self.exitCode = exitCode
    }

    /// The description of an error chappie's libraries throw; `nil` for any other. With the
    /// account it concerns, the advice names it (the command to sign it in again is spelled out).
    public init?(_ error: any Error, account: AccountName? = nil) {
        switch error {
        case let error as any ChappieFailure:
            // The store's, the vault's and the services' errors carry their own recovery.
            self.init(message: error.message, exitCode: error.recovery.exitCode)
        case let error as ChappieAuthError:
            self.init(text: error.errorDescription ?? "\(error)", recovery: error.recovery, account: account)
        case ChappieClientError.httpError(let status, let body) where EdgeRefusal.matches(status: status, body: Data(body.utf8)):
            self.init(
                message: Self.sentence("The backend: " + EdgeRefusal.explanation(originator: nil)), exitCode: ChappieExitCode.serviceUnavailable)
        case let error as ChappieClientError:
            self.init(text: error.errorDescription ?? "\(error)", recovery: error.recovery, account: account)
        case let error as ChappieHTTPClientError where error.code == .tlsFailed:
            self.init(text: error.description, recovery: .retry(.now), account: account)
        case let error as DaemonRefusal:
            // The daemon described its failure already.
            self.init(message: error.message, exitCode: error.exitCode)
        case let error as AccountNameError:
            self.init(message: error.description, exitCode: ChappieExitCode.usage)
        default:
            return nil
        }
    }

    /// A described error with its recovery's advice and exit code; a TLS failure (a certificate
    /// that does not verify) is the service being unavailable to chappie (69), whatever the
    /// recovery says, and retrying is not the advice: the message says what to trust.
    private init(text: String, recovery: ChappieErrorRecovery, account: AccountName?) {
        if ChappieHTTPClientError.describesTLSFailure(text) {
            self.init(message: Self.sentence(text), exitCode: ChappieExitCode.serviceUnavailable)
        } else {
            self.init(message: Self.sentence(text) + Self.advice(recovery, account: account), exitCode: recovery.exitCode)
        }
    }

    /// Whether the description of `error` names the account it concerns (the advice to sign it in
    /// again), so that a caller finds out which account only when it is needed.
    public static func namesAccount(_ error: any Error) -> Bool {
        switch error {
        case let error as ChappieAuthError: error.recovery == .signInAgain
        case let error as ChappieClientError: error.recovery == .signInAgain
        default: false
        }
    }

    /// The text ended as a sentence, so that advice after it reads as one.
    static func sentence(_ text: String) -> String {
        guard let last = text.last, !".!?".contains(last) else { return text }
        return text + "."
    }

    /// What the user can do, as a sentence to append.
    static func advice(_ recovery: ChappieErrorRecovery, account: AccountName?) -> String {
        switch recovery {
        case .signInAgain:
            if let account {
                " Sign \(account) in again: chappie accounts add \(account)"
            } else {
                " Sign the account in again with chappie accounts add and its name"
            }
        case .retry: " Try again later."
        case .permanent(.fixConfiguration): " Fix the configuration; retrying as it is will not help."
        case .permanent: ""
        }
    }
}

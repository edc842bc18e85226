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
    /// What the service said, word for word, when the message puts it in a person's words
    /// (`--verbose` and `--json` show it).
    public var detail: String?

    /// Creates a description.
    public init(message: String, exitCode: Int32, detail: String? = nil) {
        self.message = message
        self.exitCode = exitCode
        self.detail = detail
    }

    /// The description of an error chappie's libraries throw; `nil` for any other. With the
    /// account it concerns, the advice names it (the command to sign it in again is spelled out).
    public init?(_ error: any Error, account: AccountName? = nil) {
        if let (code, text) = Self.trustFailure(error) {
            // Not the service's doing, and retrying will not help: what to trust, or which file to fix.
            self.init(
                message: Self.sentence(text),
                exitCode: code == .untrustedFile ? ChappieExitCode.configuration : ChappieExitCode.serviceUnavailable)
            return
        }
        switch error {
        case let error as any ChappieFailure:
            // The store's, the vault's and the services' errors carry their own recovery.
            self.init(message: error.message, exitCode: error.recovery.exitCode)
        case let error as ChappieAuthError:
            let wire = Self.sentence(error.errorDescription ?? "\(error)")
            // A person's sentence first; the issuer's words for --verbose and --json.
            if let human = Self.signedOut(error.oauthErrorCode, account: account) {
                self.init(message: human + Self.advice(error.recovery, account: account), exitCode: error.recovery.exitCode, detail: wire)
            } else {
                self.init(message: wire + Self.advice(error.recovery, account: account), exitCode: error.recovery.exitCode)
            }
        case ChappieClientError.httpError(let status, let body) where EdgeRefusal.matches(status: status, body: Data(body.utf8)):
            self.init(
                message: Self.sentence("The backend: " + EdgeRefusal.explanation(originator: nil)), exitCode: ChappieExitCode.serviceUnavailable)
        case let error as ChappieClientError:
            self.init(
                message: Self.sentence(error.errorDescription ?? "\(error)") + Self.advice(error.recovery, account: account),
                exitCode: error.recovery.exitCode)
        case let error as DaemonRefusal:
            // The daemon described its failure already.
            self.init(message: error.message, exitCode: error.exitCode)
        case let error as AccountNameError:
            self.init(message: error.description, exitCode: ChappieExitCode.usage)
        case is CancellationError:
            // Ctrl-C or a signal stopped it (a wait for Retry-After, say): not a failure to explain.
            self.init(message: "Stopped before it finished.", exitCode: ChappieExitCode.interrupted)
        default:
            return nil
        }
    }

    /// A rejected certificate or an unusable certificate file behind `error`, with its text. The
    /// SDK's errors keep a client error only as its description (the seeds' shapes), so the cases
    /// that carry one are read: a network failure (the auth error's or the client's), a refresh that failed so.
    /// A server's words never count: they are in other cases (`tokenExchangeFailed`, a status).
    static func trustFailure(_ error: any Error) -> (ChappieHTTPClientError.Code, String)? {
        let text: String
        switch error {
        case let error as ChappieHTTPClientError: text = error.description
        case ChappieAuthError.networkFailure(let message): text = message
        case ChappieClientError.networkFailure(let message): text = message
        case ChappieClientError.tokenRefreshFailed(.networkFailure(let message)): text = message
        default: return nil
        }
        return ChappieHTTPClientError.trustCode(describedBy: text).map { ($0, text) }
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
    /// What the issuer's answer to a refresh means, in a person's words, for the codes that sign
    /// an account out; `nil` for others (`invalid_grant` also carries chappie's own sign-outs,
    /// whose words are chappie's already).
    static func signedOut(_ code: String?, account: AccountName?) -> String? {
        let who = account.map { "\($0)" } ?? "the account"
        return switch code {
        case "refresh_token_invalidated"?: "OpenAI signed \(who) out: its refresh token was revoked (a sign-out, or a password change)."
        case "refresh_token_expired"?: "OpenAI signed \(who) out: its refresh token expired."
        case "refresh_token_reused"?:
            "OpenAI signed \(who) out: its refresh token was used twice (another program holding the same login refreshed it)."
        default: nil
        }
    }

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
        case .permanent, .cancelled: ""
        }
    }
}

import Foundation

/// What to do about a failure: the one classification every error the SDK throws maps to
/// (docs/sdk.md). ``classify(_:)`` takes any error, so one `catch` can triage them all.
///
/// ```swift
/// switch ChappieErrorRecovery.classify(error) {
/// case .retry(.now): retryWithBackoff()
/// case .retry(.after(let seconds)): schedule(in: seconds)
/// case .signInAgain: showSignIn()
/// case .permanent(.fixConfiguration): showSettings(error)
/// case .permanent: showFailure(error)
/// case .cancelled: break
/// }
/// ```
public enum ChappieErrorRecovery: Sendable, Hashable, CustomStringConvertible {
    /// When a retry makes sense.
    public enum RetryTiming: Sendable, Hashable {
        /// Right away, with backoff between attempts.
        case now
        /// After this many seconds (a server's hint, or a backoff).
        case after(seconds: Double)
    }

    /// What a permanent failure asks of the developer or the user (docs/sdk.md's non-recoverable actions).
    public enum PermanentAction: String, Sendable, Hashable, CaseIterable {
        /// The configuration is wrong: the client's, the store's key, the OAuth client; change it.
        case fixConfiguration = "fix the configuration"
        /// This machine or platform cannot do it (no secure random source, say).
        case platformLimitation = "platform limitation"
        /// Refused or not understood: look at the error's details (denied access, a failing tool,
        /// a reply the protocol does not describe).
        case inspectCause = "inspect the cause"
    }

    /// Transient: the same request can succeed later. Always back off.
    case retry(RetryTiming)
    /// The credentials are dead: the account must be signed in again (a new flow).
    case signInAgain
    /// Retrying does not help; the action says what does.
    case permanent(PermanentAction)
    /// The caller cancelled (`CancellationError`, `URLError.cancelled`): not a failure, nothing to do.
    case cancelled

    /// The class of any error: the SDK's own errors by their ``ChappieRecoverableError/recovery``,
    /// a cancellation as ``cancelled``, `URLError`s by their code, and anything else as
    /// `.permanent(.inspectCause)`, since nothing is known that a retry would fix.
    public static func classify(_ error: any Error) -> ChappieErrorRecovery {
        switch error {
        case is CancellationError: .cancelled
        case let error as any ChappieRecoverableError: error.recovery
        case let error as URLError:
            switch error.code {
            case .cancelled: .cancelled
            case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot:
                .permanent(.fixConfiguration)
            case .timedOut, .cannotConnectToHost, .networkConnectionLost, .notConnectedToInternet, .dnsLookupFailed, .cannotFindHost:
                .retry(.now)
            default: .permanent(.inspectCause)
            }
        default: .permanent(.inspectCause)
        }
    }

    /// The exit code a command-line tool reports for this class (docs/errors.md): 75 for retry
    /// later, 77 for sign in again, 78 for a configuration to fix, 1 for other permanent failures,
    /// 130 for a cancellation (as a shell reports Ctrl-C).
    public var exitCode: Int32 {
        switch self {
        case .cancelled: ChappieExitCode.interrupted
        case .retry: ChappieExitCode.temporaryFailure
        case .signInAgain: ChappieExitCode.signInRequired
        case .permanent(.fixConfiguration): ChappieExitCode.configuration
        case .permanent: ChappieExitCode.failure
        }
    }

    /// A short description: `retry now`, `retry after 30 s`, `sign in again`, `permanent: fix the configuration`.
    public var description: String {
        switch self {
        case .retry(.now): "retry now"
        // Any Double prints: a server's number is no reason to trap.
        case .retry(.after(let seconds)): "retry after \(Int(min(max(seconds, 0), 1e9).rounded())) s"
        case .signInAgain: "sign in again"
        case .permanent(let action): "permanent: \(action.rawValue)"
        case .cancelled: "cancelled"
        }
    }
}

/// An error that knows its class: every error type the SDK throws.
public protocol ChappieRecoverableError: Error {
    /// What to do about it.
    var recovery: ChappieErrorRecovery { get }
}

/// The OAuth error codes chappie knows, with the response each calls for.
public enum OAuthErrorCode {
    /// The issuer's answer to a refresh token that was redeemed already (by another process, or Codex).
    public static let refreshTokenReused = "refresh_token_reused"

    /// The codes that say a refresh token's grant is dead: only these sign an account out.
    public static let deadGrantCodes: Set<String> = ["invalid_grant", "refresh_token_expired", "refresh_token_invalidated", "refresh_token_reused"]

    /// Whether `code` says the grant is dead (see ``deadGrantCodes``).
    public static func isDeadGrant(_ code: String) -> Bool {
        deadGrantCodes.contains(code.lowercased())
    }

    /// The recovery an OAuth error code from the token endpoint calls for, or `nil` for codes
    /// chappie does not know.
    ///
    /// `invalid_grant` and the three refresh-token codes mean the grant is dead (sign in again);
    /// `invalid_client`, `unauthorized_client`, `unsupported_grant_type`, `invalid_request`,
    /// `invalid_scope` and `access_denied` are client or request faults that retrying does not fix,
    /// but that say nothing against the stored tokens (a fixed release can still use them);
    /// `slow_down`, `temporarily_unavailable` and the server's overload codes are transient.
    public static func recovery(for code: String) -> ChappieErrorRecovery? {
        let code = code.lowercased()
        if isDeadGrant(code) { return .signInAgain }
        switch code {
        case "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope":
            return .permanent(.fixConfiguration)
        case "invalid_request", "access_denied":
            return .permanent(.inspectCause)
        case "slow_down", "temporarily_unavailable", "server_error", "server_is_overloaded":
            return .retry(.after(seconds: 5))
        default:
            return nil
        }
    }
}

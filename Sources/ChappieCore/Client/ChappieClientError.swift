public import Foundation

/// A failure of a request made with `ChappieClient` (docs/sdk.md).
///
/// ```swift
/// do {
///     let reply = try await client.send("Hello")
/// } catch ChappieClientError.usageLimitReached(let limit) {
///     print(limit.plan?.displayName ?? "Unknown", limit.resetsAt as Any)
/// }
/// ```
public enum ChappieClientError: Error, Sendable, Hashable, LocalizedError, ChappieRecoverableError {
    /// No account is stored for the configured slot: sign in first.
    case missingCredential
    /// The stored credential has no refresh token.
    case missingRefreshToken
    /// The stored credential has no ChatGPT account id.
    case missingAccountID
    /// The token expired and could not be refreshed; the string says why.
    case reauthenticationRequired(String)
    /// The plan's usage cap is reached.
    case usageLimitReached(ChappieUsageLimit)
    /// The model called a tool that is not registered.
    case toolNotRegistered(String)
    /// A tool call was denied: the tool and the reason.
    case toolDenied(String, String)
    /// A tool handler failed: the tool and the message.
    case toolFailed(String, String)
    /// The model kept calling tools beyond this many rounds.
    case toolLoopLimitExceeded(Int)
    /// The response ended in failure (`response.failed`, `response.incomplete`, or a stream that
    /// closed before `response.completed`); the partial text is in the response.
    case responseFailed(ChappieResponse)
    /// A reconnected stream replayed different text; the string is what was already delivered.
    case streamingTransportReplayDiverged(String)
    /// An HTTP error with no more specific meaning: the status and the body.
    case httpError(status: Int, body: String)
    /// No response arrived, or the connection broke before any output: the host, and what failed
    /// (never a header or a body). Not in docs/sdk.md's original list, which reported these as
    /// `httpError(status: 0, …)`. A certificate that does not verify is not retryable.
    case networkFailure(String)
    /// The reply could not be understood; the string says what was wrong.
    case invalidResponse(String)
    /// The client's configuration cannot work (a host tool's name, a transport the environment
    /// rules out); the string says what to change. Not in docs/sdk.md's original list: chappie's own.
    case invalidConfiguration(String)
    /// The access token needed refreshing and the refresh failed in a way that leaves the account
    /// signed in (the issuer unreachable or failing, an answer not understood, a client fault); the
    /// recovery is the auth error's. Not in docs/sdk.md's original list: it keeps the refresh failure's class.
    case tokenRefreshFailed(ChappieAuthError)
    /// The credential store could not be opened or read (its key, its file, its permissions); the
    /// string says why, never with a secret. Not in docs/sdk.md's original list: where Apple's SDK has the Keychain,
    /// chappie has a sealed SQLite store that can fail on its own.
    case credentialStoreUnavailable(String)

    /// What to do about it (docs/sdk.md).
    public var recovery: ChappieErrorRecovery {
        switch self {
        case .missingCredential, .missingRefreshToken, .missingAccountID, .reauthenticationRequired: .signInAgain
        case .usageLimitReached(let limit):
            .retry(.after(seconds: limit.resetsInSeconds ?? limit.resetsAt.map { max(0, $0.timeIntervalSinceNow) } ?? 3600))
        case .responseFailed(let response):
            ["context_length_exceeded", "insufficient_quota", "usage_not_included", "cyber_policy", "invalid_prompt"].contains(
                response.errorCode ?? "")
                ? .permanent(.inspectCause) : .retry(.now)
        case .httpError(let status, _): status == 429 || status >= 500 ? .retry(.now) : .permanent(.inspectCause)
        case .networkFailure(let message): ChappieTLSTrust.isTrustFailure(message) ? .permanent(.fixConfiguration) : .retry(.now)
        case .streamingTransportReplayDiverged: .retry(.now)
        case .tokenRefreshFailed(let error): error.recovery
        case .toolNotRegistered, .toolLoopLimitExceeded, .invalidConfiguration, .credentialStoreUnavailable: .permanent(.fixConfiguration)
        case .toolDenied, .toolFailed, .invalidResponse: .permanent(.inspectCause)
        }
    }

    /// A sentence for people.
    public var errorDescription: String? {
        switch self {
        case .missingCredential: "No account is signed in for this slot. Sign in first."
        case .missingRefreshToken: "The stored credential has no refresh token. Sign in again."
        case .missingAccountID: "The stored credential has no ChatGPT account id. Sign in again."
        case .reauthenticationRequired(let reason): "The account must be signed in again: \(reason)"
        case .usageLimitReached(let limit):
            "The usage limit is reached\(limit.windowName.map { " (\($0) window)" } ?? "")"
                + (limit.resetsAt.map { "; it resets at \($0.formatted(.iso8601))" } ?? "") + "."
        case .toolNotRegistered(let name): "The model called the tool \(name), which is not registered."
        case .toolDenied(let name, let reason): "The tool \(name) was denied: \(reason)"
        case .toolFailed(let name, let message): "The tool \(name) failed: \(message)"
        case .toolLoopLimitExceeded(let limit): "The model called tools for more than \(limit) rounds."
        case .responseFailed(let response):
            "The response \(response.status == "failed" ? "failed" : "ended early")"
                + (response.errorCode.map { " (\($0))" } ?? "") + (response.errorMessage.map { ": \($0)" } ?? "")
        case .streamingTransportReplayDiverged: "The reconnected stream did not match what was already delivered."
        case .httpError(let status, let body): "HTTP \(status): \(body.prefix(300))"
        case .networkFailure(let message): "No response: \(message)"
        case .invalidResponse(let reason): "The reply could not be understood: \(reason)"
        case .invalidConfiguration(let reason): "The client's configuration cannot work: \(reason)"
        case .tokenRefreshFailed(let error): "The access token could not be refreshed. \(error.errorDescription ?? "\(error)")"
        case .credentialStoreUnavailable(let reason): "The credential store cannot be used: \(reason)"
        }
    }
}

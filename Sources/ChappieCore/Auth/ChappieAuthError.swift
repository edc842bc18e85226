public import Foundation

/// A failure of signing in or of keeping a session's tokens fresh (docs/sdk.md).
///
/// ```swift
/// do {
///     try await session.refreshAuth()
/// } catch let error as ChappieAuthError where error.requiresReauthentication {
///     // the session moved to .reauthenticationRequired: show sign-in
/// }
/// ```
public enum ChappieAuthError: Error, Sendable, Hashable, LocalizedError, ChappieRecoverableError {
    /// The user did not approve the device code before it expired.
    case expiredDeviceCode
    /// Sign-in was cancelled by the program or the user.
    case cancelledSignIn
    /// A request did not get a response; the string says why (never a secret).
    case networkFailure(String)
    /// Polling stopped before the device code was approved.
    case pollingTimeout
    /// The sign-in callback did not arrive in time.
    case callbackTimeout
    /// OpenAI denied the authorisation (for example: device-code login not enabled).
    case authorizationDenied(String)
    /// The token endpoint answered an HTTP error: its status and its body (at most 2,000
    /// characters, every token-like value redacted; see ``OAuthErrorBody/redacted(_:)``). A 429 or
    /// 5xx that carried `Retry-After` has it as the body's last line, `Retry-After: SECONDS`
    /// (``retryAfter`` reads it): the case's shape is fixed (docs/sdk.md).
    case tokenExchangeFailed(statusCode: Int, body: String)
    /// No refresh token is stored: sign in from scratch.
    case missingRefreshToken
    /// The system's random number generator failed.
    case secureRandomFailed(statusCode: Int32)
    /// A response could not be parsed.
    case invalidResponse
    /// Anything else.
    case unknown(String)

    /// Whether the stored credentials are dead: a missing refresh token, or a token-endpoint answer
    /// that carries a dead-grant OAuth code (`invalid_grant`, `refresh_token_expired`,
    /// `refresh_token_invalidated`, `refresh_token_reused`). The session signs out and moves to
    /// `.reauthenticationRequired`; every other error keeps the credentials so that a retry is
    /// possible.
    ///
    /// Not every 400, 401 or 403 signs out: only the answers that say the grant is dead. A proxy's
    /// HTML 403 or an empty 401 says nothing about the grant, and signing out on it would throw
    /// away a refresh token that still works (docs/errors.md).
    public var requiresReauthentication: Bool {
        switch self {
        case .missingRefreshToken: true
        case .tokenExchangeFailed(let status, _):
            status != 429 && (400..<500).contains(status) && (oauthErrorCode.map(OAuthErrorCode.isDeadGrant) ?? false)
        default: false
        }
    }

    /// The OAuth error code in a token-endpoint failure, such as `refresh_token_reused`; `nil` when
    /// the answer carried none (HTML from a proxy, plain text, an empty or non-JSON body).
    public var oauthErrorCode: String? {
        guard case .tokenExchangeFailed(_, let body) = self else { return nil }
        return OAuthErrorBody(Data(Self.split(body).body.utf8)).code
    }

    /// The seconds a token-endpoint 429 or 5xx asked to wait (its `Retry-After`, at most a day),
    /// when it said. Another status has none, whatever its body ends with.
    public var retryAfter: TimeInterval? {
        guard case .tokenExchangeFailed(let status, let body) = self, status == 429 || status >= 500 else { return nil }
        return Self.split(body).retryAfter
    }

    /// How the server's `Retry-After` is kept at the end of a body.
    private static let retryAfterLine = "\nRetry-After: "

    /// The longest `Retry-After` kept, in seconds: a day.
    static let longestRetryAfter = 86_400

    /// A body with the server's `Retry-After` (whole seconds, at most a day) as its last line.
    package static func body(_ body: String, retryAfter: TimeInterval?) -> String {
        guard let retryAfter, retryAfter.isFinite, retryAfter >= 0 else { return body }
        return body + retryAfterLine + String(Int(min(retryAfter, TimeInterval(longestRetryAfter)).rounded(.up)))
    }

    /// The body without its `Retry-After` line, and the seconds that line says: digits only, at
    /// most a day (the line is chappie's, but the body before it is a server's).
    private static func split(_ body: String) -> (body: String, retryAfter: TimeInterval?) {
        guard let range = body.range(of: retryAfterLine, options: .backwards) else { return (body, nil) }
        let digits = body[range.upperBound...]
        guard !digits.isEmpty, digits.count <= 6, digits.allSatisfy({ ("0"..."9").contains($0) }), let seconds = Int(digits) else {
            return (body, nil)
        }
        return (String(body[..<range.lowerBound]), TimeInterval(min(seconds, longestRetryAfter)))
    }

    /// What to do about it.
    ///
    /// A token-endpoint failure is classified by its body first: a dead-grant code is
    /// `.signInAgain`, a client or request fault (`invalid_client`, `invalid_request`, …) or any
    /// other OAuth code on a 4xx is `.permanent` (fix the configuration for the client faults); an answer without an OAuth error (a proxy's HTML,
    /// an empty body) and every 429 and 5xx mean the path to the issuer failed: retry later.
    public var recovery: ChappieErrorRecovery {
        switch self {
        case .networkFailure(let message): return ChappieTLSTrust.isTrustFailure(message) ? .permanent(.fixConfiguration) : .retry(.now)
        case .cancelledSignIn: return .cancelled
        case .expiredDeviceCode, .missingRefreshToken, .pollingTimeout, .callbackTimeout: return .signInAgain
        case .tokenExchangeFailed(let status, _):
            guard status != 429, (400..<500).contains(status), let code = oauthErrorCode else { return .retry(.after(seconds: retryAfter ?? 5)) }
            return OAuthErrorCode.recovery(for: code) ?? .permanent(.inspectCause)
        case .secureRandomFailed: return .permanent(.platformLimitation)
        case .authorizationDenied, .invalidResponse, .unknown: return .permanent(.inspectCause)
        }
    }

    /// Reads back a ``tokenExchangeFailed(statusCode:body:)`` from its ``errorDescription`` (as kept
    /// in an account's last error: `… HTTP 401: code: description`), so that a later call reports
    /// what the issuer said, once. The body becomes `{"error":code,"error_description":…}` again;
    /// a description without a code keeps no body.
    public init?(tokenEndpointDescription text: String) {
        let prefix = "The token endpoint answered HTTP "
        guard text.hasPrefix(prefix) else { return nil }
        let rest = text.dropFirst(prefix.count)
        guard let colon = rest.firstIndex(of: ":"), let status = Int(rest[..<colon]) else { return nil }
        self = .tokenExchangeFailed(statusCode: status, body: Self.body(summary: String(rest[rest.index(after: colon)...].drop { $0 == " " })))
    }

    /// The JSON body of an error from its `code: description` summary; empty when it has no code.
    public static func body(summary: String) -> String {
        let code = summary.prefix { $0 != ":" }
        guard !code.isEmpty, code.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }) else {
            return ""
        }
        var object = ["error": String(code)]
        let description = summary.dropFirst(code.count).drop { $0 == ":" || $0 == " " }
        if !description.isEmpty { object["error_description"] = String(description) }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// A sentence for people.
    public var errorDescription: String? {
        switch self {
        case .expiredDeviceCode: "The device code expired before it was approved. Start the sign-in again."
        case .cancelledSignIn: "Sign-in was cancelled."
        case .networkFailure(let message): "The network request failed: \(message)"
        case .pollingTimeout: "Stopped waiting for the device code to be approved."
        case .callbackTimeout: "The sign-in callback did not arrive in time."
        case .authorizationDenied(let message): "OpenAI denied the sign-in: \(message)"
        case .tokenExchangeFailed(let status, let body):
            "The token endpoint answered HTTP \(status): " + { OAuthErrorBody(Data($0.utf8)).summary(bodySize: $0.utf8.count) }(Self.split(body).body)
        case .missingRefreshToken: "No refresh token is stored; sign in again."
        case .secureRandomFailed(let status): "The system's random number generator failed (status \(status))."
        case .invalidResponse: "The server's response could not be understood."
        case .unknown(let message): message
        }
    }
}

import Chappie
import ChappieTestSupport
import Foundation
import Testing

/// Every case of both SDK error enums, with the recovery it reports: the table docs/sdk.md shows.
@Suite("The error table of docs/sdk.md is the code's: every case of both error enums and its recovery")
struct ErrorTableTests {
    /// The case's name: an exhaustive switch, so a new case does not compile until it is named here
    /// (and then the table below misses it, and the test says so).
    private static func name(_ error: ChappieClientError) -> String {
        switch error {
        case .missingCredential: "missingCredential"
        case .missingRefreshToken: "missingRefreshToken"
        case .missingAccountID: "missingAccountID"
        case .reauthenticationRequired: "reauthenticationRequired"
        case .usageLimitReached: "usageLimitReached"
        case .toolNotRegistered: "toolNotRegistered"
        case .toolDenied: "toolDenied"
        case .toolFailed: "toolFailed"
        case .toolLoopLimitExceeded: "toolLoopLimitExceeded"
        case .responseFailed: "responseFailed"
        case .streamingTransportReplayDiverged: "streamingTransportReplayDiverged"
        case .httpError: "httpError"
        case .networkFailure: "networkFailure"
        case .invalidResponse: "invalidResponse"
        case .invalidConfiguration: "invalidConfiguration"
        case .tokenRefreshFailed: "tokenRefreshFailed"
        case .credentialStoreUnavailable: "credentialStoreUnavailable"
        }
    }

    private static func name(_ error: ChappieAuthError) -> String {
        switch error {
        case .expiredDeviceCode: "expiredDeviceCode"
        case .cancelledSignIn: "cancelledSignIn"
        case .networkFailure: "networkFailure"
        case .pollingTimeout: "pollingTimeout"
        case .callbackTimeout: "callbackTimeout"
        case .authorizationDenied: "authorizationDenied"
        case .tokenExchangeFailed: "tokenExchangeFailed"
        case .missingRefreshToken: "missingRefreshToken"
        case .secureRandomFailed: "secureRandomFailed"
        case .invalidResponse: "invalidResponse"
        case .unknown: "unknown"
        }
    }

    private static func response(_ code: String) -> ChappieResponse {
        ChappieResponse(id: nil, status: "failed", text: "", errorCode: code, errorMessage: nil)
    }

    /// A sample of each case (several where the payload decides), labelled as the table labels it.
    static let clientSamples: [(String, ChappieClientError)] =
        [
            ("missingCredential", .missingCredential),
            ("missingRefreshToken", .missingRefreshToken),
            ("missingAccountID", .missingAccountID),
            ("reauthenticationRequired(reason)", .reauthenticationRequired("revoked")),
            (
                "usageLimitReached(limit) with resetsInSeconds 600",
                .usageLimitReached(
                    ChappieUsageLimit(
                        type: "usage_limit_reached", message: nil, plan: .plus, resetsAt: nil, resetsInSeconds: 600, rateLimit: nil))
            ),
            ("toolNotRegistered(name)", .toolNotRegistered("t")),
            ("toolDenied(name, reason)", .toolDenied("t", "no")),
            ("toolFailed(name, message)", .toolFailed("t", "broke")),
            ("toolLoopLimitExceeded(limit)", .toolLoopLimitExceeded(8)),
            ("responseFailed(response) server_is_overloaded", .responseFailed(response("server_is_overloaded"))),
            ("responseFailed(response) stream_closed (a cut stream)", .responseFailed(response("stream_closed"))),
        ]
        + ["context_length_exceeded", "insufficient_quota", "usage_not_included", "cyber_policy", "invalid_prompt"].map { code in
            ("responseFailed(response) \(code)", ChappieClientError.responseFailed(response(code)))
        } + [
            ("streamingTransportReplayDiverged(partial)", .streamingTransportReplayDiverged("part")),
            ("networkFailure(message) (no response)", .networkFailure("connection lost: …")),
            ("networkFailure(message) certificate rejected", .networkFailure("certificate rejected: …")),
            ("httpError(status: 429, body)", .httpError(status: 429, body: "")),
            ("httpError(status: 5xx, body)", .httpError(status: 503, body: "")),
            ("httpError(status: other 4xx, body)", .httpError(status: 400, body: "")),
            ("invalidResponse(reason)", .invalidResponse("x")),
            ("invalidConfiguration(reason)", .invalidConfiguration("x")),
            ("tokenRefreshFailed(networkFailure)", .tokenRefreshFailed(.networkFailure("down"))),
            ("tokenRefreshFailed(networkFailure certificate rejected)", .tokenRefreshFailed(.networkFailure("certificate rejected: …"))),
            (
                "tokenRefreshFailed(tokenExchangeFailed 429/5xx or no OAuth code)",
                .tokenRefreshFailed(.tokenExchangeFailed(statusCode: 502, body: "<html>"))
            ),
            (
                "tokenRefreshFailed(tokenExchangeFailed invalid_client)",
                .tokenRefreshFailed(.tokenExchangeFailed(statusCode: 401, body: #"{"error":"invalid_client"}"#))
            ),
            ("tokenRefreshFailed(invalidResponse)", .tokenRefreshFailed(.invalidResponse)),
            ("credentialStoreUnavailable(reason)", .credentialStoreUnavailable("x")),
        ]

    static let authSamples: [(String, ChappieAuthError)] =
        [
            ("expiredDeviceCode", .expiredDeviceCode),
            ("cancelledSignIn", .cancelledSignIn),
            ("networkFailure(message)", .networkFailure("down")),
            ("networkFailure(message) certificate rejected or file unusable", .networkFailure("certificate file unusable: …")),
            ("pollingTimeout", .pollingTimeout),
            ("callbackTimeout", .callbackTimeout),
            ("authorizationDenied(message)", .authorizationDenied("no")),
        ]
        + [
            "invalid_grant", "refresh_token_expired", "refresh_token_invalidated", "refresh_token_reused", "invalid_client", "unauthorized_client",
            "unsupported_grant_type", "invalid_scope", "invalid_request", "access_denied", "some_other_code",
        ].map { code in
            ("tokenExchangeFailed 4xx \(code)", ChappieAuthError.tokenExchangeFailed(statusCode: 400, body: #"{"error":"\#(code)"}"#))
        } + [
            ("tokenExchangeFailed 4xx slow_down", .tokenExchangeFailed(statusCode: 400, body: #"{"error":"slow_down"}"#)),
            ("tokenExchangeFailed 4xx without an OAuth code (a proxy's HTML)", .tokenExchangeFailed(statusCode: 403, body: "<html>Forbidden</html>")),
            ("tokenExchangeFailed 4xx plain text", .tokenExchangeFailed(statusCode: 401, body: "invalid_grant")),
            ("tokenExchangeFailed 429 invalid_grant", .tokenExchangeFailed(statusCode: 429, body: #"{"error":"invalid_grant"}"#)),
            ("tokenExchangeFailed 5xx", .tokenExchangeFailed(statusCode: 503, body: "")),
            (
                "tokenExchangeFailed 429 or 5xx with Retry-After: 120",
                .tokenExchangeFailed(statusCode: 503, body: ChappieAuthError.body("", retryAfter: 120))
            ),
            ("missingRefreshToken", .missingRefreshToken),
            ("secureRandomFailed(statusCode)", .secureRandomFailed(statusCode: -1)),
            ("invalidResponse", .invalidResponse),
            ("unknown(message)", .unknown("x")),
        ]

    /// The table's rows: `| `label` | recovery | exit |`.
    static func rows<E>(_ samples: [(String, E)], recovery: (E) -> ChappieErrorRecovery) -> [String] {
        samples.map { label, error in "| `\(label)` | \(recovery(error)) | \(recovery(error).exitCode) |" }
    }

    /// The rows between `<!-- NAME -->` and `<!-- /NAME -->` in docs/sdk.md.
    private static func documentedRows(_ marker: String) throws -> [String] {
        let root = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/sdk.md"), encoding: .utf8)
        guard let start = text.range(of: "<!-- \(marker) -->"), let end = text.range(of: "<!-- /\(marker) -->") else { return [] }
        return text[start.upperBound..<end.lowerBound].split(separator: "\n").map(String.init).filter { $0.hasPrefix("| `") }
    }

    @Test("Every ChappieClientError case has a row, and each row's recovery and exit code are the code's")
    func clientTable() throws {
        let named = Set(Self.clientSamples.map { Self.name($0.1) })
        #expect(named.count == 17, "a case has no sample: \(named.sorted())")
        let expected = Self.rows(Self.clientSamples) { $0.recovery }
        #expect(try Self.documentedRows("client-errors") == expected, "docs/sdk.md should read:\n\(expected.joined(separator: "\n"))")
    }

    @Test("Every ChappieAuthError case has a row, and each row's recovery and exit code are the code's")
    func authTable() throws {
        let named = Set(Self.authSamples.map { Self.name($0.1) })
        #expect(named.count == 11, "a case has no sample: \(named.sorted())")
        let expected = Self.rows(Self.authSamples) { $0.recovery }
        #expect(try Self.documentedRows("auth-errors") == expected, "docs/sdk.md should read:\n\(expected.joined(separator: "\n"))")
    }

    @Test("Only a dead grant or a missing refresh token requires reauthentication, and each is classed sign in again")
    func reauthenticationAgrees() {
        for (label, error) in Self.authSamples {
            let deadGrant = error.oauthErrorCode.map(OAuthErrorCode.isDeadGrant) ?? false
            if case .tokenExchangeFailed(429, _) = error {
                #expect(!error.requiresReauthentication, "\(label)")
            } else {
                #expect(error.requiresReauthentication == (error == .missingRefreshToken || deadGrant), "\(label)")
            }
            if error.requiresReauthentication { #expect(error.recovery == .signInAgain, "\(label)") }
        }
    }
}

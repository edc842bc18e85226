package import ChappieCore
import ChappieStore
package import Foundation

/// The device-code sign-in of docs/protocol.md §1, from the user code to stored-ready tokens.
///
/// ```swift
/// let result = try await DeviceCodeSignIn(oauth: oauth).run { state in print(state) }
/// print(result.claims.account.email ?? "")
/// ```
package struct DeviceCodeSignIn: Sendable {
    /// What a completed sign-in gives.
    package struct Result: Sendable {
        /// The tokens.
        package var credentials: Credentials
        /// The id_token's claims: who the account is.
        package var account: ChappieAccountInfo
        /// The access token's expiry, if it is a readable JWT.
        package var accessTokenExpiresAt: Date?
    }

    /// The issuer client.
    package let oauth: OAuthClient
    /// How long chappie polls before it gives up with `.pollingTimeout`: 15 minutes, as Codex.
    package var pollingTimeout: Duration

    /// Creates a sign-in.
    package init(oauth: OAuthClient, pollingTimeout: Duration = .seconds(15 * 60)) {
        self.oauth = oauth
        self.pollingTimeout = pollingTimeout
    }

    /// Runs the sign-in: asks for a code, reports it through `progress`, polls at the server's
    /// interval (at least 1 s, longer after `slow_down`) until approved, refused or expired, then
    /// exchanges the code.
    ///
    /// - Throws: ``ChappieAuthError``: `.expiredDeviceCode` when the server says the code expired
    ///   (its error code, or its `expires_at` passed), `.authorizationDenied` when it says the user
    ///   refused, `.pollingTimeout` after ``pollingTimeout``, `.callbackTimeout` when the code
    ///   exchange times out, `.cancelledSignIn` when the task is cancelled, and the others as the
    ///   server answers.
    package func run(progress: @Sendable (ChappieDeviceLinkState) async -> Void = { _ in }) async throws(ChappieAuthError) -> Result {
        await progress(.requestingCode)
        let code = try await oauth.requestDeviceCode()
        let clock = ContinuousClock()
        let deadline = clock.now + pollingTimeout
        // The server's expiry, on the monotonic clock.
        let serverExpiry = code.lifetime.map { clock.now + $0 }
        let expiresAt = Date().addingTimeInterval(Double((code.lifetime ?? pollingTimeout).components.seconds))
        var interval = code.interval
        await progress(
            .waitingForApproval(
                userCode: code.userCode, verificationURL: oauth.endpoints.deviceVerificationURL, expiresAt: expiresAt, interval: interval))
        while true {
            if let serverExpiry, clock.now >= serverExpiry { throw .expiredDeviceCode }
            guard clock.now < deadline else { throw .pollingTimeout }
            switch try await oauth.poll(code) {
            case .approved(let authorizationCode, let verifier):
                await progress(.exchangingCode)
                let credentials = try await oauth.exchange(authorizationCode: authorizationCode, codeVerifier: verifier)
                guard let claims = try? TokenClaims(jwt: credentials.idToken) else { throw .invalidResponse }
                await progress(.completed)
                return Result(
                    credentials: credentials, account: claims.account,
                    accessTokenExpiresAt: credentials.accessTokenExpiresAt)
            case .pending(let slowDown):
                if slowDown {
                    interval += .seconds(5)
                    await progress(
                        .waitingForApproval(
                            userCode: code.userCode, verificationURL: oauth.endpoints.deviceVerificationURL, expiresAt: expiresAt, interval: interval)
                    )
                }
                // Sleep the interval, but never past the deadline or the server's expiry.
                var remaining = deadline - clock.now
                if let serverExpiry { remaining = min(remaining, serverExpiry - clock.now) }
                do {
                    try await Task.sleep(for: min(interval, max(remaining, .zero)))
                } catch {
                    throw .cancelledSignIn
                }
            }
        }
    }
}

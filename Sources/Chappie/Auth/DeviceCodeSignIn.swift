public import ChappieCore
public import ChappieStore
public import Foundation

/// The device-code sign-in of openai-protocol.md §1, from the user code to stored-ready tokens.
///
/// ```swift
/// let result = try await DeviceCodeSignIn(oauth: oauth).run { state in print(state) }
/// print(result.claims.account.email ?? "")
/// ```
public struct DeviceCodeSignIn: Sendable {
    /// What a completed sign-in gives.
    public struct Result: Sendable {
        /// The tokens.
        public var credentials: Credentials
        /// The id_token's claims: who the account is.
        public var account: ChappieAccountInfo
        /// The access token's expiry, if it is a readable JWT.
        public var accessTokenExpiresAt: Date?
    }

    /// The issuer client.
    public let oauth: OAuthClient
    /// How long a code is valid: 15 minutes, as the service says.
    public var lifetime: Duration

    /// Creates a sign-in.
    public init(oauth: OAuthClient, lifetime: Duration = .seconds(15 * 60)) {
        self.oauth = oauth
        self.lifetime = lifetime
    }

    /// Runs the sign-in: asks for a code, reports it through `progress`, polls at the server's
    /// interval (at least 1 s, longer after `slow_down`) until approved or expired, then exchanges
    /// the code.
    ///
    /// - Throws: ``ChappieAuthError``: `.expiredDeviceCode` after the lifetime, `.cancelledSignIn`
    ///   when the task is cancelled, and the others as the server answers.
    public func run(progress: @Sendable (ChappieDeviceLinkState) async -> Void = { _ in }) async throws(ChappieAuthError) -> Result {
        await progress(.requestingCode)
        let code = try await oauth.requestDeviceCode()
        let clock = ContinuousClock()
        let deadline = clock.now + lifetime
        let expiresAt = Date().addingTimeInterval(Double(lifetime.components.seconds))
        var interval = code.interval
        await progress(.waitingForApproval(
            userCode: code.userCode, verificationURL: oauth.endpoints.deviceVerificationURL, expiresAt: expiresAt, interval: interval))
        while true {
            guard clock.now < deadline else { throw .expiredDeviceCode }
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
                    await progress(.waitingForApproval(
                        userCode: code.userCode, verificationURL: oauth.endpoints.deviceVerificationURL, expiresAt: expiresAt, interval: interval))
                }
                // Sleep the interval, but never past the deadline.
                let remaining = deadline - clock.now
                do {
                    try await Task.sleep(for: min(interval, max(remaining, .zero)))
                } catch {
                    throw .cancelledSignIn
                }
            }
        }
    }
}

public import ChappieCore
public import ChappieStore
public import Foundation

/// Another place an account's tokens live and may be refreshed by someone else, such as the Codex
/// CLI's `auth.json`. The refresher adopts newer tokens found there and writes refreshed ones back.
public protocol CredentialMirror: Sendable {
    /// The lock file that guards the mirror (taken after the account's own lock).
    var lockURL: URL { get }
    /// Tokens in the mirror for the same account that are newer than `current`, if any.
    func newerCredentials(than current: Credentials, for account: Account) -> Credentials?
    /// Writes the account's new tokens to the mirror.
    func publish(_ credentials: Credentials, for account: Account) throws
}

/// Keeps an account's tokens fresh without ever redeeming a refresh token twice (design.md, The
/// token lifecycle; openai-protocol.md §3 and §9).
///
/// A refresh holds the account's exclusive `flock` (released by the kernel if the process dies),
/// re-reads the stored tokens after taking it and skips the call when another process already
/// refreshed, adopts newer tokens from a mirror (Codex's `auth.json`), commits new tokens before they
/// are used or reported, and on `refresh_token_reused` re-reads before giving up.
///
/// ```swift
/// let fresh = try await refresher.validCredentials(for: account)
/// send(bearer: fresh.credentials.accessToken)
/// ```
public struct TokenRefresher: Sendable {
    /// What a call did.
    public enum Outcome: String, Sendable, Codable {
        /// The stored access token was valid for longer than the margin.
        case stillValid = "still_valid"
        /// The tokens were refreshed at the issuer.
        case refreshed
        /// Another process (or Codex) had refreshed; its tokens were taken.
        case adopted
    }

    /// Valid tokens and what it took to get them.
    public struct Fresh: Sendable {
        /// The tokens.
        public var credentials: Credentials
        /// The account as stored afterwards.
        public var account: Account
        /// What happened.
        public var outcome: Outcome
        /// The access token's expiry.
        public var expiresAt: Date?
    }

    /// The store.
    public let store: AccountStore
    /// The issuer client.
    public let oauth: OAuthClient
    /// Refresh when the access token expires within this margin. Default: 5 minutes.
    public var margin: Duration
    /// The mirror of an account, if it has one.
    public var mirror: @Sendable (Account) -> (any CredentialMirror)?

    /// Creates a refresher.
    public init(
        store: AccountStore, oauth: OAuthClient, margin: Duration = .seconds(300),
        mirror: @escaping @Sendable (Account) -> (any CredentialMirror)? = { _ in nil }
    ) {
        self.store = store
        self.oauth = oauth
        self.margin = margin
        self.mirror = mirror
    }

    /// Tokens that stay valid for at least the margin, refreshing only when needed (or when `force`).
    ///
    /// - Throws: ``ChappieAuthError`` (its `recovery` says what to do; permanent failures have
    ///   marked the account `reauth_required`), ``StoreError`` for store problems.
    public func validCredentials(for account: Account, force: Bool = false) async throws -> Fresh {
        let seen = try store.credentials(for: account)
        if account.status == .reauthRequired {
            throw ChappieAuthError.tokenExchangeFailed(
                statusCode: 401, body: "account \(account.name) must be signed in again (\(account.lastError ?? "its refresh token is no longer valid"))")
        }
        if !force, !isExpiring(seen, account: account) {
            return Fresh(credentials: seen, account: account, outcome: .stillValid, expiresAt: expiry(seen))
        }

        let accountLock = try await FileLock.acquire(store.lockURL(for: account))
        let mirror = mirror(account)
        var mirrorLock: FileLock?
        if let mirror { mirrorLock = try await FileLock.acquire(mirror.lockURL) }
        let fresh = try await refreshUnderLock(account, seen: seen, force: force, mirror: mirror)
        // The locks are held until here (Swift may otherwise release them after their last use).
        withExtendedLifetime((accountLock, mirrorLock)) {}
        return fresh
    }

    private func refreshUnderLock(_ account: Account, seen: Credentials, force: Bool, mirror: (any CredentialMirror)?) async throws -> Fresh {
        // Re-read under the lock: another process may have refreshed while we waited.
        var current = try store.account(id: account.id)
        var stored = try store.credentials(for: current)
        if let mirror, let newer = mirror.newerCredentials(than: stored, for: current) {
            current = try store.updateCredentials(
                of: current, to: newer, accessTokenExpiresAt: expiry(newer), refreshedAt: Date(), event: "adopted",
                detail: "newer tokens found in \(mirror.lockURL.deletingLastPathComponent().path)")
            stored = newer
        }
        if current.status == .reauthRequired {
            throw ChappieAuthError.tokenExchangeFailed(statusCode: 401, body: "account \(current.name) must be signed in again")
        }
        if stored.refreshToken != seen.refreshToken && !isExpiring(stored, account: current) {
            return Fresh(credentials: stored, account: current, outcome: .adopted, expiresAt: expiry(stored))
        }
        if !force, !isExpiring(stored, account: current) {
            return Fresh(credentials: stored, account: current, outcome: .stillValid, expiresAt: expiry(stored))
        }
        return try await redeem(stored, account: current, mirror: mirror)
    }

    private func redeem(_ stored: Credentials, account: Account, mirror: (any CredentialMirror)?) async throws -> Fresh {
        let refreshed: OAuthClient.RefreshedTokens
        switch await attemptRefresh(stored.refreshToken) {
        case .success(let tokens):
            refreshed = tokens
        case .failure(let error):
            return try handleRefreshFailure(error, stored: stored, account: account, mirror: mirror)
        }
        let credentials = Credentials(
            idToken: refreshed.idToken ?? stored.idToken, accessToken: refreshed.accessToken ?? stored.accessToken,
            refreshToken: refreshed.refreshToken ?? stored.refreshToken)
        // Commit before anything else uses or reports the new tokens.
        let updated = try store.updateCredentials(
            of: account, to: credentials, accessTokenExpiresAt: expiry(credentials), refreshedAt: Date(), event: "refreshed")
        if let mirror {
            do {
                try mirror.publish(credentials, for: updated)
            } catch {
                try? store.recordFailure(of: updated, message: "refreshed, but could not update \(mirror.lockURL.deletingLastPathComponent().path): \(error)", event: "mirror_failed")
            }
        }
        return Fresh(credentials: credentials, account: updated, outcome: .refreshed, expiresAt: expiry(credentials))
    }

    /// Redeems the refresh token in a task of its own, so that cancelling the caller (Ctrl-C, SIGTERM)
    /// cannot abandon a request the server may already have answered by rotating the token: the
    /// answer is awaited and committed first.
    private func attemptRefresh(_ refreshToken: String) async -> Result<OAuthClient.RefreshedTokens, ChappieAuthError> {
        let oauth = self.oauth
        return await Task { () -> Result<OAuthClient.RefreshedTokens, ChappieAuthError> in
            do throws(ChappieAuthError) {
                return .success(try await oauth.refresh(refreshToken))
            } catch {
                return .failure(error)
            }
        }.value
    }

    /// After a failed redemption: adopt newer tokens if someone else holds them (on
    /// `refresh_token_reused`), else record the failure and throw it.
    private func handleRefreshFailure(
        _ error: ChappieAuthError, stored: Credentials, account: Account, mirror: (any CredentialMirror)?
    ) throws -> Fresh {
        if error.oauthErrorCode == "refresh_token_reused" {
            // Someone else may hold newer tokens: the store (another process) or the mirror (Codex).
            let latest = try store.account(id: account.id)
            let again = try store.credentials(for: latest)
            if again.refreshToken != stored.refreshToken, !isExpiring(again, account: latest) {
                return Fresh(credentials: again, account: latest, outcome: .adopted, expiresAt: expiry(again))
            }
            if let mirror, let newer = mirror.newerCredentials(than: stored, for: account) {
                let updated = try store.updateCredentials(
                    of: account, to: newer, accessTokenExpiresAt: expiry(newer), refreshedAt: Date(), event: "adopted",
                    detail: "after refresh_token_reused, from \(mirror.lockURL.deletingLastPathComponent().path)")
                return Fresh(credentials: newer, account: updated, outcome: .adopted, expiresAt: expiry(newer))
            }
        }
        let message = error.errorDescription ?? "\(error)"
        try store.recordFailure(
            of: account, message: message, status: error.requiresReauthentication ? .reauthRequired : nil, event: "refresh_failed")
        throw error
    }

    /// Whether the access token expires within the margin; a token without a readable `exp` is
    /// refreshed 8 days after the last refresh, as Codex does.
    public func isExpiring(_ credentials: Credentials, account: Account, now: Date = Date()) -> Bool {
        if let expiry = expiry(credentials) {
            return expiry.timeIntervalSince(now) <= Double(margin.components.seconds)
        }
        guard let last = account.lastRefreshAt else { return true }
        return now.timeIntervalSince(last) > 8 * 86400
    }

    private func expiry(_ credentials: Credentials) -> Date? {
        (try? TokenClaims(jwt: credentials.accessToken))?.expiresAt
    }
}

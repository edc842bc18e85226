package import ChappieCore
package import ChappieStore
package import Foundation
import Logging
import Synchronization

/// Another place an account's tokens live and may be refreshed by someone else, such as the Codex
/// CLI's `auth.json`. The refresher adopts newer tokens found there and writes refreshed ones back,
/// both only when the mirror holds the same account (never over someone else's login).
package protocol CredentialMirror: Sendable {
    /// The lock file that guards the mirror (taken after the account's own lock).
    var lockURL: URL { get }
    /// Tokens in the mirror for the same account that are newer than `current`, if any.
    func newerCredentials(than current: Credentials, for account: Account) -> Credentials?
    /// Writes the account's new tokens to the mirror, when it is absent or holds the same account.
    ///
    /// - Returns: `false` when the mirror holds another account's login and was left alone.
    func publish(_ credentials: Credentials, for account: Account) throws -> Bool
    /// Why the mirror must be neither read nor written (another user could change it), or `nil`.
    func refusal() -> String?
}

/// Keeps an account's tokens fresh without ever redeeming a refresh token twice, and without ever
/// dropping tokens it redeemed (docs/security.md; docs/protocol.md §3 and §9).
///
/// A refresh holds the account's exclusive `flock` (released by the kernel if the process dies),
/// re-reads the stored tokens after taking it and skips the call when another process already
/// refreshed, adopts newer tokens from a mirror (Codex's `auth.json`), holds the key lock shared
/// from redemption to commit (so the key cannot be rotated under it), commits new tokens before
/// they are used or reported (retrying, and keeping them in a recovery file if the database still
/// refuses), and on `refresh_token_reused` re-reads before giving up. Only an answer that says the
/// grant is dead signs the account out.
///
/// ```swift
/// let fresh = try await refresher.validCredentials(for: account)
/// send(bearer: fresh.credentials.accessToken)
/// ```
package struct TokenRefresher: Sendable {
    /// What a call did.
    package enum Outcome: String, Sendable, Codable {
        /// The stored access token was valid for longer than the margin.
        case stillValid = "still_valid"
        /// The tokens were refreshed at the issuer.
        case refreshed
        /// Another process (or Codex) had refreshed; its tokens were taken.
        case adopted
    }

    /// What a refresher got from the issuer or elsewhere, for a watcher that counts it (the daemon's metrics).
    package enum Event: Sendable, Equatable {
        /// A refresh token was redeemed at the issuer and the new tokens committed.
        case redeemed
        /// Newer tokens were taken from the account's Codex home, or from another process after
        /// the issuer refused this one's refresh token.
        case adopted
        /// The issuer refused a refresh (or could not be asked): its OAuth error code, if it said one.
        case refused(oauthError: String?)
    }

    /// Valid tokens and what it took to get them. Prints redacted.
    package struct Fresh: Sendable, RedactedDescription {
        /// The tokens.
        package var credentials: Credentials
        /// The account as stored afterwards.
        package var account: Account
        /// What happened.
        package var outcome: Outcome
        /// The access token's expiry.
        package var expiresAt: Date?
        /// Set when the tokens are usable but something went wrong on the way (a refresh that must
        /// be tried again later while the access token is still valid).
        package var warning: String?

        /// Creates a result.
        package init(credentials: Credentials, account: Account, outcome: Outcome, expiresAt: Date?, warning: String? = nil) {
            self.credentials = credentials
            self.account = account
            self.outcome = outcome
            self.expiresAt = expiresAt
            self.warning = warning
        }

        /// The outcome and the account, never the tokens.
        package var redactedFields: KeyValuePairs<String, String> {
            [
                "account": account.name.rawValue, "outcome": outcome.rawValue, "credentials": redactedMarker,
                "expiresAt": expiresAt.map { "\($0)" } ?? "nil", "warning": warning ?? "nil",
            ]
        }
    }

    /// The store.
    package let store: any AccountStore
    /// The issuer client.
    package let oauth: OAuthClient
    /// Refresh when the access token expires within this margin. Default: 5 minutes.
    package var margin: Duration
    /// The mirror of an account, if it has one.
    package var mirror: @Sendable (Account) -> (any CredentialMirror)?
    /// How many times the commit of redeemed tokens is tried before they go to a recovery file.
    /// Default: 4.
    package var commitAttempts: Int = 4
    /// The wait after the first failed commit; it doubles with each further one. Default: 250 ms.
    package var commitBackoff: Duration = .milliseconds(250)
    /// Told of each ``Event`` as it happens. Default: nobody.
    package var observe: @Sendable (Event) -> Void = { _ in }
    /// Checks the issuer's signature on tokens from a mirror and on refresh replies.
    package var signatures: TokenSignatures

    /// Creates a refresher.
    package init(
        store: any AccountStore, oauth: OAuthClient, margin: Duration = .seconds(300),
        mirror: @escaping @Sendable (Account) -> (any CredentialMirror)? = { _ in nil }
    ) {
        self.store = store
        self.oauth = oauth
        self.margin = margin
        self.mirror = mirror
        signatures = TokenSignatures(oauth)
    }

    /// Tokens that stay valid for at least the margin, refreshing only when needed (or when `force`).
    ///
    /// - Parameters:
    ///   - account: The account.
    ///   - force: Refresh even when the access token is valid for longer than the margin.
    ///   - retrySignedOut: Try an account marked `reauth_required` once more at the issuer (a
    ///     success puts it back to `ok`); otherwise such an account fails at once with what the
    ///     issuer said when it was signed out.
    /// - Throws: ``ChappieAuthError`` (its `recovery` says what to do; only a dead grant marks the
    ///   account `reauth_required`), ``StoreError`` for store problems (redeemed tokens that could
    ///   not be committed are kept in a recovery file first).
    package func validCredentials(for account: Account, force: Bool = false, retrySignedOut: Bool = false) async throws -> Fresh {
        let fresh = try await decide(account, force: force, retrySignedOut: retrySignedOut)
        Self.logger.debug(
            "token decision",
            metadata: [
                "account": "\(account.name)", "outcome": "\(fresh.outcome.rawValue)",
                "expires_in_s": "\(fresh.expiresAt.map { String(Int($0.timeIntervalSinceNow)) } ?? "unknown")",
                "margin_s": "\(margin.components.seconds)",
            ])
        return fresh
    }

    /// Refresh decisions, at debug level (`--verbose`): the account, what was decided and why; never a token.
    private static let logger = Logger(label: "chappie.refresh")

    private func decide(_ account: Account, force: Bool, retrySignedOut: Bool) async throws -> Fresh {
        let seen = try await store.credentials(for: account)
        let signedOut = account.status == .reauthRequired
        if signedOut, !retrySignedOut || !Self.issuerSignedOut(account) { throw Self.signedOutError(account) }
        let mirror = mirror(account)
        // Codex may have refreshed in the home this account owns (its stored token may even be
        // revoked): newer tokens there are adopted, under the locks, before anything is handed out.
        let mirrorIsNewer = mirror.map { $0.newerCredentials(than: seen, for: account) != nil } ?? false
        if !force, !signedOut, !mirrorIsNewer, !isExpiring(seen, account: account) {
            return Fresh(credentials: seen, account: account, outcome: .stillValid, expiresAt: expiry(seen))
        }

        return try await store.withRefreshLock(on: account) {
            // A home others can write is refused before anything is made in it (its lock file).
            if let mirror, let refusal = mirror.refusal() { throw try await refuse(account, because: refusal) }
            var mirrorLock: FileLock?
            if let mirror { mirrorLock = try await FileLock.acquire(mirror.lockURL) }
            defer { withExtendedLifetime(mirrorLock) {} }
            // Re-read under the lock: another process may have refreshed while we waited, and
            // `switch` may have moved the home's ownership (a mirror the account no longer owns is
            // neither read nor written).
            let current = try await store.account(id: account.id)
            let owned = mirror.flatMap { mirror in self.mirror(current)?.lockURL == mirror.lockURL ? mirror : nil }
            return try await refreshUnderLock(current, seen: seen, force: force || retrySignedOut, retrySignedOut: retrySignedOut, mirror: owned)
        }
    }

    private func refreshUnderLock(
        _ account: Account, seen: Credentials, force: Bool, retrySignedOut: Bool, mirror: (any CredentialMirror)?
    ) async throws -> Fresh {
        var current = account
        var stored = try await store.credentials(for: current)
        // A home another user can write could hold forged tokens, or newer ones chappie cannot
        // trust: then chappie must not redeem its own (possibly spent) token either.
        if let mirror, let refusal = mirror.refusal() { throw try await refuse(current, because: refusal) }
        if let mirror, let newer = try await verifiedNewer(in: mirror, than: stored, for: current) {
            Self.logger.debug(
                "adopting newer tokens Codex left in the account's home",
                metadata: [
                    "account": "\(current.name)", "home": "\(mirror.lockURL.deletingLastPathComponent().path)",
                ])
            current = try await store.updateCredentials(
                of: current, to: newer, accessTokenExpiresAt: expiry(newer), refreshedAt: Date(), event: .adopted,
                detail: "newer tokens found in \(mirror.lockURL.deletingLastPathComponent().path)")
            stored = newer
            observe(.adopted)
        }
        if current.status == .reauthRequired, !retrySignedOut || !Self.issuerSignedOut(current) { throw Self.signedOutError(current) }
        if stored.refreshToken != seen.refreshToken && !isExpiring(stored, account: current) {
            Self.logger.debug(
                "another process refreshed while this one waited for the lock; its tokens are used", metadata: ["account": "\(current.name)"])
            return Fresh(credentials: stored, account: current, outcome: .adopted, expiresAt: expiry(stored))
        }
        if !force, !isExpiring(stored, account: current) {
            return Fresh(credentials: stored, account: current, outcome: .stillValid, expiresAt: expiry(stored))
        }
        // The key must not change between redemption and commit (and a key another process rotated
        // to is taken up before anything is redeemed).
        Self.logger.debug(
            "redeeming the refresh token at the issuer",
            metadata: [
                "account": "\(current.name)", "forced": "\(force)",
                "expires_in_s": "\(expiry(stored).map { String(Int($0.timeIntervalSinceNow)) } ?? "unknown")",
            ])
        // A reply from another issuer than the stored tokens name would be refused once the token
        // is spent (security.md, "Signatures"): such a configuration is refused before.
        if let foreign = signatures.foreignIssuer(of: stored) { throw try await refuse(current, because: foreign) }
        let redeemable = current
        return try await store.withKeyHeld {
            // A refresh not yet sent is not started once the caller is cancelled (Ctrl-C, SIGTERM);
            // one already sent is awaited and stored whatever the caller does.
            try Task.checkCancellation()
            // Room for the recovery file first: on a full disk nothing is redeemed.
            try await store.reserveRecovery(for: redeemable)
            return try await redeem(stored, account: redeemable, mirror: mirror)
        }
    }

    private func redeem(_ stored: Credentials, account: Account, mirror: (any CredentialMirror)?) async throws -> Fresh {
        // Nothing to redeem: sign in again (an empty token would only earn the issuer's refusal).
        guard !stored.refreshToken.isEmpty else { throw ChappieAuthError.missingRefreshToken }
        // The issuer's keys first, while nothing is spent: checking the reply then needs no network.
        let keysReady = await signatures.prepare()
        try Task.checkCancellation()
        RefreshBounds.inFlight.add(1, ordering: .relaxed)
        let answer = await attemptRefresh(stored.refreshToken)
        // From here the token is spent: what follows (storing, quarantining, signing out) runs in a
        // task of its own, so that a cancelled caller cannot leave it half done.
        return try await Task {
            defer { RefreshBounds.inFlight.subtract(1, ordering: .relaxed) }
            return try await settle(answer, stored: stored, account: account, mirror: mirror, keysReady: keysReady)
        }.value
    }

    /// Who a refresh reply's own tokens say the account is: its id_token's claims, else its access
    /// token's; `nil` when neither names a plan or an e-mail.
    static func identity(of reply: OAuthClient.RefreshedTokens) -> ChappieAccountInfo? {
        [reply.idToken, reply.accessToken].compactMap { $0 }.lazy.compactMap { try? TokenClaims(jwt: $0).account }
            .first { $0.plan != nil || $0.email != nil }
    }

    /// Stores what a redemption answered, or records why not.
    private func settle(
        _ answer: Result<OAuthClient.RefreshedTokens, ChappieAuthError>, stored: Credentials, account: Account, mirror: (any CredentialMirror)?,
        keysReady: Bool
    ) async throws -> Fresh {
        let refreshed: OAuthClient.RefreshedTokens
        switch answer {
        case .success(let tokens):
            refreshed = tokens
        case .failure(.invalidResponse):
            // The issuer answered 2xx, so it took the refresh token, but its answer cannot be read:
            // the stored token is spent. Signing out beats presenting it again (reuse revokes all).
            let message =
                Self.spentTokenMarker
                + "the issuer accepted \(account.name)'s refresh token but its answer could not be read, so the new tokens are lost; sign the account in again (chappie accounts add \(account.name))"
            try await store.recordFailure(of: account, message: message, status: .reauthRequired, event: .refreshFailed)
            observe(.refused(oauthError: nil))
            throw ChappieAuthError.unknown(message)
        case .failure(let error):
            return try await handleRefreshFailure(error, stored: stored, account: account, mirror: mirror)
        }
        let credentials = Credentials(
            idToken: refreshed.idToken ?? stored.idToken, accessToken: refreshed.accessToken ?? stored.accessToken,
            refreshToken: refreshed.refreshToken ?? stored.refreshToken)
        // Tokens that do not parse, or that name another account or user, are never stored or used:
        // they are kept aside for a person, and the account says why.
        if let problem = Self.mismatch(refreshed, for: account) {
            return try await quarantine(credentials, of: account, because: problem)
        }
        // Signed by the issuer, or kept aside as the tokens above. One that cannot be checked now
        // (the issuer's keys are unreachable) is stored, saying so: the old refresh token is spent.
        // A key the issuer does not list yet may be one it is rotating to: such a reply is stored,
        // as one whose keys cannot be fetched, and the audit log says so.
        var unchecked: String?
        var verified = false
        let verdict =
            keysReady
            ? await signatures.check(tokens: [refreshed.idToken, refreshed.accessToken].compactMap { $0 }, fetching: false)
            : .unchecked("the issuer's keys could not be fetched")
        switch verdict {
        case .verified: verified = true
        case .forged(let reason): return try await quarantine(credentials, of: account, because: "its tokens are not the issuer's: \(reason)")
        case .unknownKey, .unchecked:
            let reason = if case .unchecked(let why) = verdict { why } else { "signed with a key the issuer's key set does not list" }
            unchecked = "signature not checked: \(reason)"
            Self.logger.warning(
                "stored a refresh reply whose signature could not be checked", metadata: ["account": "\(account.name)", "reason": "\(reason)"])
        }
        // Commit before anything else uses or reports the new tokens.
        var updated: Account
        do {
            updated = try await commit(credentials, of: account, detail: unchecked ?? "")
        } catch {
            // Not stored: Codex's copy is a second place the new tokens survive (and the home must
            // not keep a spent refresh token).
            if let mirror { _ = try? mirror.publish(credentials, for: account) }
            throw error
        }
        // The plan and e-mail the issuer's new tokens name (a plan upgrade), from this reply's own
        // tokens (its id_token, else its access token), and only when their signature was checked.
        if verified, let info = Self.identity(of: refreshed) {
            updated = (try? await store.updateIdentity(of: updated, to: info)) ?? updated
        }
        if let mirror {
            let home = mirror.lockURL.deletingLastPathComponent().path
            do {
                if try !mirror.publish(credentials, for: updated) {
                    try? await store.recordEvent(.mirrorSkipped, account: updated, detail: "\(home)/auth.json holds another login; it was left alone")
                }
            } catch {
                try? await store.recordFailure(of: updated, message: "refreshed, but could not update \(home): \(error)", event: .mirrorFailed)
            }
        }
        observe(.redeemed)
        return Fresh(credentials: credentials, account: updated, outcome: .refreshed, expiresAt: expiry(credentials))
    }

    /// Tokens in the mirror newer than `stored`, once their signature is the issuer's. Newer tokens
    /// that are not the issuer's, or cannot be checked now, stop the refresh: chappie's own
    /// refresh token may be one Codex spent, and redeeming it would revoke the whole family.
    private func verifiedNewer(in mirror: any CredentialMirror, than stored: Credentials, for account: Account) async throws -> Credentials? {
        guard let newer = mirror.newerCredentials(than: stored, for: account) else { return nil }
        switch await signatures.adoption(of: newer, for: account, in: mirror.lockURL.deletingLastPathComponent()) {
        case .adopt:
            return newer
        case .refuse(let why):
            throw try await refuse(account, because: why + "; the stored refresh token is not redeemed meanwhile, since Codex may have spent it")
        case .later(let why), .unlisted(let why):
            throw ChappieAuthError.networkFailure(why + "; nothing was redeemed")
        }
    }

    /// The failure for an account whose Codex home another user can change, recorded on it: its
    /// stored token may be one Codex already spent, so it is not redeemed either.
    private func refuse(_ account: Account, because refusal: String) async throws -> StoreError {
        let message = "\(account.name) was not refreshed: \(refusal)"
        try? await store.recordFailure(of: account, message: message, status: nil, event: .refreshFailed)
        return StoreError(.io, message)
    }

    /// What is wrong with a refresh reply's tokens for `account`, or `nil` when they may be stored:
    /// each token sent must be a JWT, and name the account's ChatGPT account and user where it names
    /// one. A reply that is only odd (a time out of range, an unknown plan) is stored: the old
    /// refresh token is spent, so refusing it would lose the account.
    package static func mismatch(_ reply: OAuthClient.RefreshedTokens, for account: Account) -> String? {
        for (name, token) in [("id_token", reply.idToken), ("access_token", reply.accessToken)] {
            guard let token else { continue }
            guard let claims = try? TokenClaims(jwt: token) else { return "its \(name) is not a JWT" }
            if let ours = account.info.accountID, let theirs = claims.account.accountID, theirs != ours {
                return "its \(name) names another ChatGPT account"
            }
            if let ours = account.info.userID, let theirs = claims.account.userID, theirs != ours {
                return "its \(name) names another ChatGPT user"
            }
        }
        if reply.refreshToken?.isEmpty == true { return "its refresh_token is empty" }
        if reply.accessToken == nil { return "it holds no access_token" }
        return nil
    }

    /// Keeps a reply that must not be used in the store's quarantine and signs the account out with
    /// the reason: its old refresh token is spent, and the reply is a person's to judge.
    private func quarantine(_ credentials: Credentials, of account: Account, because problem: String) async throws -> Fresh {
        let kept: String
        do {
            kept =
                "It is kept sealed in \(try await Task { try await store.quarantine(credentials, of: account) }.value.path), which chappie never uses by itself"
        } catch {
            kept = "It could not be kept aside (\(error))"
        }
        let message =
            Self.spentTokenMarker
            + "the issuer's refresh reply for \(account.name) was not stored: \(problem). \(kept); sign the account in again (chappie accounts add \(account.name))"
        try await store.recordFailure(of: account, message: message, status: .reauthRequired, event: .refreshFailed)
        observe(.refused(oauthError: nil))
        throw ChappieAuthError.unknown(message)
    }

    /// Commits redeemed tokens, trying `commitAttempts` times with doubling waits; when the store
    /// still refuses, keeps them in a recovery file (which every later read uses and the next open
    /// adopts) and reports the failure. The old refresh token is spent: dropping these would lose
    /// the account.
    private func commit(_ credentials: Credentials, of account: Account, detail: String) async throws -> Account {
        let refreshedAt = Date()
        var pause = commitBackoff
        var lastError: StoreError?
        let store = self.store
        let expiresAt = expiry(credentials)
        for attempt in 1...max(1, commitAttempts) {
            do {
                // In a task of its own: cancelling the caller must not cancel the commit.
                return try await Task {
                    try await store.updateCredentials(
                        of: account, to: credentials, accessTokenExpiresAt: expiresAt, refreshedAt: refreshedAt, event: .refreshed, detail: detail)
                }.value
            } catch {
                let error = error as? StoreError ?? StoreError(.database, "\(error)")
                lastError = error
                // The account is gone: there is nothing to keep the tokens for.
                if error.code == .notFound { throw error }
                if attempt < commitAttempts {
                    // Not cancellable: the redeemed tokens must be kept whatever the caller does.
                    let wait = pause
                    await Task { try? await Task.sleep(for: wait) }.value
                    pause *= 2
                }
            }
        }
        let file = try await Task {
            try await store.keepForRecovery(credentials, of: account, accessTokenExpiresAt: expiresAt, refreshedAt: refreshedAt)
        }.value
        // A store that is only unreachable for now (the team pool's server restarting) is "try again later".
        throw StoreError(
            lastError?.code == .unavailable ? .unavailable : .database,
            "account \(account.name) was refreshed, but the new tokens could not be stored (\(lastError?.message ?? "unknown error")); they are kept sealed in \(file.path) and the next chappie command uses and stores them"
        )
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
    /// `refresh_token_reused`), else record the failure and throw it. Only a dead grant signs the
    /// account out; any other failure leaves its status as it was.
    private func handleRefreshFailure(
        _ error: ChappieAuthError, stored: Credentials, account: Account, mirror: (any CredentialMirror)?
    ) async throws -> Fresh {
        Self.logger.debug(
            "the issuer refused the refresh",
            metadata: [
                "account": "\(account.name)", "oauth_error": "\(error.oauthErrorCode ?? "none")", "recovery": "\(error.recovery)",
            ])
        observe(.refused(oauthError: error.oauthErrorCode))
        if error.requiresReauthentication {
            // Before signing out: someone else may hold newer tokens (a reused or invalidated token
            // may have been redeemed by them): the store (another process) or the mirror (Codex).
            let latest = try await store.account(id: account.id)
            let again = try await store.credentials(for: latest)
            if again.refreshToken != stored.refreshToken, !isExpiring(again, account: latest) {
                observe(.adopted)
                return Fresh(credentials: again, account: latest, outcome: .adopted, expiresAt: expiry(again))
            }
            if let mirror, let newer = mirror.newerCredentials(than: stored, for: account) {
                switch await signatures.adoption(of: newer, for: account, in: mirror.lockURL.deletingLastPathComponent()) {
                case .adopt:
                    let updated = try await store.updateCredentials(
                        of: account, to: newer, accessTokenExpiresAt: expiry(newer), refreshedAt: Date(), event: .adopted,
                        detail: "after \(error.oauthErrorCode ?? "a dead grant"), from \(mirror.lockURL.deletingLastPathComponent().path)")
                    observe(.adopted)
                    return Fresh(credentials: newer, account: updated, outcome: .adopted, expiresAt: expiry(newer))
                case .later(let why), .unlisted(let why):
                    // Codex may hold the live tokens: while they cannot be judged, nothing is signed out.
                    throw ChappieAuthError.networkFailure(why)
                case .refuse:
                    break
                }
            }
        }
        let message = error.errorDescription ?? "\(error)"
        try await store.recordFailure(
            of: account, message: message, status: error.requiresReauthentication ? .reauthRequired : nil, event: .refreshFailed)
        throw error
    }

    /// The error for an account signed out earlier: what the issuer said then, once.
    static func signedOutError(_ account: Account) -> ChappieAuthError {
        if let said = account.lastError, let parsed = ChappieAuthError(tokenEndpointDescription: said), parsed.requiresReauthentication {
            return parsed
        }
        if let said = account.lastError, !issuerSignedOut(account) {
            return .tokenExchangeFailed(statusCode: 401, body: ChappieAuthError.body(summary: "invalid_grant: \(said)"))
        }
        return .tokenExchangeFailed(
            statusCode: 401, body: ChappieAuthError.body(summary: "invalid_grant: account \(account.name) was signed out; sign it in again"))
    }

    /// Whether the account was signed out by the issuer's refusal, which one more try cannot make
    /// worse. One signed out by chappie (a quarantined or unreadable refresh reply) holds a refresh
    /// token the issuer already spent: presenting it again would make the issuer revoke the family.
    static func issuerSignedOut(_ account: Account) -> Bool {
        !(account.lastError?.hasPrefix(spentTokenMarker) ?? false)
    }

    /// How the reason of a sign-out by chappie itself begins (its stored refresh token is spent).
    static let spentTokenMarker = "refresh token spent: "

    /// Whether the access token expires within the margin; a token without a readable `exp` is
    /// refreshed 8 days after the last refresh, as Codex does.
    package func isExpiring(_ credentials: Credentials, account: Account, now: Date = Date()) -> Bool {
        if let expiry = expiry(credentials) {
            return expiry.timeIntervalSince(now) <= Double(margin.components.seconds)
        }
        guard let last = account.lastRefreshAt else { return true }
        return now.timeIntervalSince(last) > 8 * 86400
    }

    private func expiry(_ credentials: Credentials) -> Date? {
        credentials.accessTokenExpiresAt
    }
}

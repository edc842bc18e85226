package import Chappie
public import ChappieCore
package import ChappieNet
package import ChappieStore
public import Foundation

/// Sign-in, tokens and refreshes: the operations behind `chappie accounts add`, `chappie token`
/// and `chappie refresh`.
public struct TokenService: Sendable {
    /// One account's refresh result.
    public struct RefreshReport: Sendable {
        /// The account's name.
        public var name: AccountName
        /// What happened, when it worked.
        package var outcome: TokenRefresher.Outcome?
        /// The access token's expiry afterwards (after a failure: the stored token's, which still serves until then).
        public var expiresAt: Date?
        /// The failure, when it did not.
        public var error: (any Error)?
    }

    /// The store.
    package let store: any AccountStore
    /// The issuer client.
    package let oauth: OAuthClient

    /// Told of what every refresher of this service redeems, adopts or is refused (the daemon's metrics).
    private let refreshEvents: @Sendable (TokenRefresher.Event) -> Void

    /// Creates the service.
    package init(
        store: any AccountStore, endpoints: ChappieEndpoints, http: ChappieHTTPClient? = nil,
        refreshEvents: @escaping @Sendable (TokenRefresher.Event) -> Void = { _ in }
    ) {
        self.store = store
        self.oauth = OAuthClient(endpoints: endpoints, http: http ?? endpoints.httpClient())
        self.refreshEvents = refreshEvents
    }

    /// Checks the issuer's signature on tokens from outside chappie's own exchange.
    package var signatures: TokenSignatures { TokenSignatures(oauth) }

    /// A refresher that keeps exported Codex homes in step.
    package func refresher(margin: Duration = .seconds(300)) -> TokenRefresher {
        var refresher = TokenRefresher(store: store, oauth: oauth, margin: margin) { account in
            account.codexHome.map { CodexMirror(home: URL(fileURLWithPath: $0)) }
        }
        refresher.observe = refreshEvents
        return refresher
    }

    /// Revokes an account's refresh token at the issuer (§3.5), before the account is removed: the
    /// newest one chappie knows (newer tokens in the account's Codex home are adopted first; an
    /// expired access token is refreshed first, as any use would). The store is not changed.
    ///
    /// - Throws: ``ChappieAuthError`` when the issuer cannot be reached or refuses; ``StoreError``.
    public func revoke(_ name: AccountName) async throws {
        let account = try await store.account(named: name)
        let refreshToken =
            account.status == .reauthRequired
            ? try await store.credentials(for: account).refreshToken
            : try await refresher(margin: .zero).validCredentials(for: account).credentials.refreshToken
        try await oauth.revoke(refreshToken: refreshToken)
    }

    /// Where a browser sign-in is.
    public enum BrowserSignInStep: Sendable {
        /// The user must open `url` (`opened`: chappie started a browser on it) before `expiresAt`.
        case openURL(URL, opened: Bool, expiresAt: Date)
        /// The browser came back: exchanging the code for tokens.
        case exchangingCode
    }

    /// Signs an account in with the device-code flow and stores it; the same ChatGPT account and
    /// user again updates the stored one.
    public func signIn(
        name: AccountName?, progress: @Sendable (ChappieDeviceLinkState) async -> Void
    ) async throws -> SignInOutcome {
        try await save(DeviceCodeSignIn(oauth: oauth).run(progress: progress), name: name)
    }

    /// Signs an account in through the browser (authorization code with PKCE, for workspaces
    /// without device codes) and stores it as ``signIn(name:progress:)`` does. Listens on
    /// 127.0.0.1:1455, else 1457 (`callbackPort` instead, when given; 0 picks a free one), opens
    /// the authorize URL in a browser when there is one, and waits up to 15 minutes
    /// (`callbackTimeout`) for it to come back.
    public func signInWithBrowser(
        name: AccountName?, callbackPort: Int? = nil, callbackTimeout: Duration = .seconds(15 * 60),
        progress: @Sendable (BrowserSignInStep) async -> Void
    ) async throws -> SignInOutcome {
        let signIn = BrowserSignIn(oauth: oauth, ports: callbackPort.map { [$0] } ?? BrowserSignIn.registeredPorts, callbackTimeout: callbackTimeout)
        let result = try await signIn.run { step in
            switch step {
            case .waiting(let url, _, let expiresAt): await progress(.openURL(url, opened: BrowserLauncher.open(url), expiresAt: expiresAt))
            case .exchangingCode: await progress(.exchangingCode)
            }
        }
        return try await save(result, name: name)
    }

    /// What a sign-in stored.
    public struct SignInOutcome: Sendable {
        /// The account.
        public var account: Account
        /// Whether it is new (else its tokens were renewed).
        public var created: Bool
        /// What the renewal did to the Codex home the account owns, if it owns one.
        public var codexHome: CodexHomeRenewal?
    }

    /// Stores a completed sign-in; a renewal writes the new tokens into the Codex home the account owns.
    private func save(_ result: DeviceCodeSignIn.Result, name: AccountName?) async throws -> SignInOutcome {
        // Sealed under the key lock (shared), with the store's current key: a rotation meanwhile
        // must not make the new tokens unopenable or refuse them.
        // In a task of its own: once the issuer handed out the tokens, Ctrl-C must not drop them.
        let store = self.store
        let saved = try await Task {
            try await store.withKeyHeld {
                try await store.save(
                    info: result.account, credentials: result.credentials, accessTokenExpiresAt: result.accessTokenExpiresAt,
                    refreshedAt: Date(), name: name, event: .signedIn)
            }
        }.value
        // The tokens are stored: nothing after that may make the sign-in fail.
        guard saved.created else {
            // In a task of its own too: the Codex home gets the renewed tokens whatever Ctrl-C does.
            let signatures = self.signatures
            let renewal = await Task { await CodexMirror.publishRenewal(of: saved.account, in: store, signatures: signatures) }.value
            return SignInOutcome(account: saved.account, created: false, codexHome: renewal)
        }
        return SignInOutcome(account: (try? await store.activateIfNoneIs(saved.account)) ?? saved.account, created: true)
    }

    /// The named account, or the active one.
    public func account(_ name: AccountName?) async throws -> Account {
        if let name { return try await store.account(named: name) }
        guard let active = try await store.activeAccount() else {
            throw ServiceError(.invalidInput, "no account named and none is active: name one, or run chappie accounts switch NAME")
        }
        return active
    }

    /// A valid access token for an account, refreshed if it expires within `margin`.
    ///
    /// When the refresh fails in a way that calls for a later retry (the issuer or the path to it
    /// failed) but the stored access token has not expired, that token is returned with a
    /// ``TokenRefresher/Fresh/warning``: the caller can work until the next try.
    package func token(for name: AccountName?, margin: Duration = .seconds(300)) async throws -> TokenRefresher.Fresh {
        let account = try await account(name)
        do {
            return try await refresher(margin: margin).validCredentials(for: account)
        } catch let error as ChappieAuthError {
            guard case .retry = error.recovery, let latest = try? await store.account(id: account.id), latest.status == .ok,
                let stored = try? await store.credentials(for: latest),
                let expiry = stored.accessTokenExpiresAt, expiry > Date()
            else { throw error }
            let minutes = Int(expiry.timeIntervalSinceNow / 60)
            return TokenRefresher.Fresh(
                credentials: stored, account: latest, outcome: .stillValid, expiresAt: expiry,
                warning:
                    "could not refresh \(latest.name) (\(error.errorDescription ?? "\(error)")); its access token is still valid for \(minutes) min")
        }
    }

    /// Refreshes accounts, `concurrency` at a time: all of them if `names` is empty. With
    /// `onlyIfExpiringWithin`, accounts whose token stays valid that long are left alone. Accounts
    /// marked `reauth_required` are reported without a call to the issuer, unless named: a named
    /// one is tried once more, and a success puts it back to `ok`.
    public func refresh(
        _ names: [AccountName], onlyIfExpiringWithin: Duration?, concurrency: Int = 8
    ) async throws -> [RefreshReport] {
        let accounts = try await store.accounts(named: names)
        let refresher = refresher(margin: onlyIfExpiringWithin ?? .seconds(300))
        let force = onlyIfExpiringWithin == nil
        // Named accounts that were signed out are tried once more; --all leaves them alone.
        let retrySignedOut = !names.isEmpty
        return await boundedMap(accounts, concurrency: concurrency) { account in
            do {
                let fresh = try await refresher.validCredentials(for: account, force: force, retrySignedOut: retrySignedOut)
                return RefreshReport(name: account.name, outcome: fresh.outcome, expiresAt: fresh.expiresAt)
            } catch {
                let stored = (try? await store.account(id: account.id))?.accessTokenExpiresAt ?? account.accessTokenExpiresAt
                return RefreshReport(name: account.name, expiresAt: stored, error: error)
            }
        }
    }
}

public import ChappieCore
import ChappieNet
import ChappieStore
import Foundation
import Synchronization
public import Observation

/// One account's sign-in session: observable state, device-code sign-in, sign-out and refresh
/// (docs/sdk.md). Tokens never leave the store through it.
///
/// It is `@Observable` (Swift Observation) and also publishes every state on ``states`` for command
/// lines and services. It restores the slot's stored session when created:
/// ``Chappie/openAuthSession(configuration:)`` returns once that is read; the synchronous `init` (`Chappie.authSession()`, docs/sdk.md) returns at
/// once and reads it in the background, so that opening the store (an Argon2id derivation, a wait
/// for another process's lock) never holds the main actor. ``isRestoring`` says when it is done.
/// Any ``ChappieConfiguration`` works: a local store, or a team pool when the program links
/// `ChappiePool` and sets `StoreOptions.poolBackend`.
///
/// ```swift
/// let session = await Chappie.openAuthSession(configuration: configuration)
/// try await session.startDeviceCodeSignIn()
/// if case .signedIn = session.state { print(session.accountInfo?.email ?? "") }
/// ```
@MainActor
@Observable
public final class ChappieAuthSession {
    /// The sign-in lifecycle stage.
    public private(set) var state: ChappieAuthState = .signedOut {
        // While the stored session is read, observers wait for its answer (``waitUntilRestored()``).
        didSet { if state != oldValue, !isRestoring { observers.publish(state) } }
    }
    /// Progress of a device-code sign-in.
    public private(set) var deviceLinkState: ChappieDeviceLinkState = .idle
    /// Who the signed-in account is.
    public private(set) var accountInfo: ChappieAccountInfo?
    /// The most recent failure, or `nil`. A sign-in the caller cancelled is not a failure.
    public private(set) var lastError: ChappieAuthError?
    /// Whether the store is still being opened (after the synchronous `init`); ``states`` has
    /// nothing yet. ``state`` already says what this machine's store holds, read without its key
    /// when it can be (docs/sdk.md, "Restoring"), and becomes `.failed` if the store then does not
    /// open. ``waitUntilRestored()`` waits for the end.
    public private(set) var isRestoring = true

    /// Every state from the current one: each access is a stream of its own, so any number of
    /// observers each see every change (a state set again unchanged is not a change).
    public nonisolated var states: AsyncStream<ChappieAuthState> { observers.subscribe() }

    @ObservationIgnored private nonisolated let observers = StateBroadcast()
    @ObservationIgnored private let configuration: ChappieConfiguration
    @ObservationIgnored private let store: StoreHandle
    @ObservationIgnored private let oauth: OAuthClient
    @ObservationIgnored private var signIn: Task<Void, any Error>?
    @ObservationIgnored private var restoring: Task<Void, Never>?
    /// The removals of ``signOut()``, in order: each waits for the one before it.
    @ObservationIgnored private var removal: Task<Void, Never>?
    /// A refresh under way (``refreshAuth()``): a sign-out's removal waits for it.
    @ObservationIgnored private var refreshing: Task<Void, Never>?
    /// Counts sign-outs: an answer that arrives after one (a restore, a sign-in's save, a refresh)
    /// is not shown.
    @ObservationIgnored private var signOuts = 0
    /// Counts sign-ins: a sign-in that a newer one replaced shows nothing.
    @ObservationIgnored private var signIns = 0
    /// The store once open, for a ``signOut()`` that removes the account before it returns.
    @ObservationIgnored private var openStore: (any AccountStore)?

    /// Creates a session and starts reading the stored account of the configured slot, if any, in
    /// the background (see ``isRestoring``).
    public init(configuration: ChappieConfiguration = ChappieConfiguration()) {
        self.configuration = configuration
        store = StoreHandle(configuration.store)
        oauth = OAuthClient(
            endpoints: configuration.endpoints, http: configuration.endpoints.httpClient(), exchangeTimeout: configuration.callbackTimeout)
        // What this machine's store holds, read at once without its key, so that code written from
        // the seeds sees a signed-in user as signed in (not a team pool, nor a directory that is not
        // private: then the keyed open below says it).
        if case .some(let slot) = KeylessLocalStore.slot(configuration.account, options: configuration.store) {
            if case .account(let account) = slot { show(account) } else { show(nil) }
        }
        // No sign-out can have come yet: one that comes before the answer wins over it.
        restoring = Task { await self.restore(signOuts: 0) }
    }

    /// Returns once the stored session has been read (at once when it has).
    public func waitUntilRestored() async {
        await restoring?.value
    }

    /// Reads the slot's stored account into ``state`` and ``accountInfo`` (none for an account that
    /// must be signed in again: its tokens are kept in the store, but the session has no credential).
    private func restore(signOuts: Int) async {
        defer {
            isRestoring = false
            // The first state observers see: the stored one (or the sign-out's).
            observers.publish(state)
        }
        let opened: any AccountStore
        do {
            opened = try await store.opened()
        } catch {
            state = .failed(error.localizedDescription)
            return
        }
        openStore = opened
        let account = try? await opened.account(named: configuration.account)
        // Signed out meanwhile: that is the newer answer.
        guard signOuts == self.signOuts else { return }
        show(account)
    }

    /// The session as the store has the account.
    private func show(_ account: Account?) {
        guard let account else {
            accountInfo = nil
            state = .signedOut
            return
        }
        guard account.status != .reauthRequired else {
            accountInfo = nil
            state = .reauthenticationRequired
            return
        }
        accountInfo = account.info
        state = .signedIn(expiresAt: account.accessTokenExpiresAt)
    }

    /// The open store, or the failure as an auth error (recorded in ``lastError``).
    private func openedStore() async throws(ChappieAuthError) -> any AccountStore {
        do {
            let opened = try await store.opened()
            openStore = opened
            return opened
        } catch {
            let failure = ChappieAuthError.unknown(error.localizedDescription)
            fail(failure)
            throw failure
        }
    }

    /// Signs in with the device-code flow and stores the account in the configured slot.
    ///
    /// ``state`` moves to `.signingIn`, `.awaitingDeviceCode` (show its code and URL), then
    /// `.signedIn`. Cancelling the calling task, or ``signOut()``, stops it with `.cancelledSignIn`.
    ///
    /// - Throws: ``ChappieAuthError``: `.expiredDeviceCode`, `.authorizationDenied`,
    ///   `.pollingTimeout` (after ``ChappieConfiguration/deviceCodePollingTimeout``),
    ///   `.callbackTimeout` (after ``ChappieConfiguration/callbackTimeout``), `.cancelledSignIn`, …
    public func startDeviceCodeSignIn() async throws(ChappieAuthError) {
        await waitUntilRestored()
        // A sign-out's removal still to come would remove this sign-in's account.
        await removal?.value
        let store = try await openedStore()
        signIn?.cancel()
        signIns += 1
        lastError = nil
        state = .signingIn
        let flow = DeviceCodeSignIn(oauth: oauth, pollingTimeout: configuration.deviceCodePollingTimeout)
        let slot = configuration.account
        let (signOuts, signIns) = (self.signOuts, self.signIns)
        // Whether this sign-in still speaks for the session: no sign-out and no newer sign-in since.
        let current = { @MainActor [weak self] in self?.signOuts == signOuts && self?.signIns == signIns }
        let task = Task { @MainActor in
            let result = try await flow.run { [weak self] progress in
                await MainActor.run {
                    guard let self, current() else { return }
                    self.deviceLinkState = progress
                    if case .waitingForApproval(let code, let url, _, _) = progress {
                        self.state = .awaitingDeviceCode(userCode: code, verificationURL: url)
                    }
                }
            }
            // In a task of its own: once the issuer handed out the tokens, cancelling must not drop them.
            let saved = try await Task {
                try await store.withKeyHeld {
                    try await store.save(
                        info: result.account, credentials: result.credentials, accessTokenExpiresAt: result.accessTokenExpiresAt,
                        refreshedAt: Date(), name: slot, event: .signedIn)
                }
            }.value
            // A signOut() during the save wins: its removal waits for this task, then removes the account.
            guard current() else { throw ChappieAuthError.cancelledSignIn }
            self.accountInfo = saved.account.info
            self.state = .signedIn(expiresAt: saved.account.accessTokenExpiresAt)
        }
        signIn = task
        // Ended, it is no longer under way: a later signOut() need not wait for it.
        defer { if signIn == task { signIn = nil } }
        do {
            try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        } catch ChappieAuthError.cancelledSignIn {
            // The caller's choice, not a failure (``lastError`` stays): back to what the store holds
            // (signed in, signed out, or to be signed in again), unless a sign-out said it already.
            // Read in a task of its own: this one is cancelled, and the read would be too.
            let account = await Task { try? await store.account(named: slot) }.value
            if current() {
                deviceLinkState = .idle
                show(account)
            }
            throw ChappieAuthError.cancelledSignIn
        } catch let error as ChappieAuthError {
            if current() { fail(error) }
            throw error
        } catch {
            let wrapped = ChappieAuthError.unknown("\(error)")
            if current() { fail(wrapped) }
            throw wrapped
        }
    }

    /// Forgets the slot's stored credentials and cancels a sign-in in progress.
    ///
    /// The session is signed out when this returns. With the store on this machine and nothing
    /// under way, the account is removed before it returns (docs/sdk.md), also while the store is
    /// still opening: then without its key (`KeylessLocalStore`). Otherwise (a sign-in saving its
    /// tokens, a refresh at the issuer, a team pool, a database busy this instant) it is removed in
    /// the background once those end, so that the session still ends signed out;
    /// ``waitUntilSignedOut()`` waits for that. A removal that fails is ``lastError``.
    public func signOut() {
        let pending = signIn
        pending?.cancel()
        signIn = nil
        signOuts += 1
        accountInfo = nil
        deviceLinkState = .idle
        state = .signedOut
        let slot = configuration.account
        if pending == nil, refreshing == nil, removal == nil, let local = openStore as? SQLiteAccountStore {
            do {
                if (try? local.accountNow(named: slot)) != nil { try local.removeNow(slot) }
            } catch {
                lastError = .unknown("the account could not be removed from the store: \(error)")
            }
            return
        }
        // The store still opening: a program that exits right after must not leave the credential.
        // (Not once the open has failed: a wrong key must not delete the account it cannot read.)
        if pending == nil, refreshing == nil, removal == nil, isRestoring, openStore == nil,
            KeylessLocalStore.remove(slot, options: configuration.store)
        {
            return
        }
        let (before, refresh, store) = (removal, refreshing, store)
        removal = Task {
            await before?.value
            _ = await pending?.result
            await refresh?.value
            do {
                let opened = try await store.opened()
                if (try? await opened.account(named: slot)) != nil { try await opened.remove(slot, note: "signed out") }
            } catch {
                self.lastError = .unknown("the account could not be removed from the store: \(error)")
            }
        }
    }

    /// Returns once every ``signOut()`` so far has removed the account from the store.
    public func waitUntilSignedOut() async {
        while let pending = removal {
            await pending.value
            if removal == pending { removal = nil }
        }
    }

    /// Revokes the slot's refresh token at the issuer (§3.5), then signs out as ``signOut()`` does.
    ///
    /// - Parameter revoking: Whether to revoke first; `false` is ``signOut()``.
    /// - Throws: ``ChappieAuthError`` when the revocation fails (the issuer unreachable or refusing,
    ///   or the stored credential unreadable): then nothing is signed out or removed, and
    ///   ``lastError`` says why. An empty slot has nothing to revoke.
    public func signOut(revoking: Bool) async throws(ChappieAuthError) {
        if revoking {
            await waitUntilRestored()
            let store = try await openedStore()
            do {
                let account = try await store.account(named: configuration.account)
                try await oauth.revoke(refreshToken: try await store.credentials(for: account).refreshToken)
            } catch let error as StoreError where error.code == .notFound {
                // Nothing is stored: nothing to revoke.
            } catch {
                let failure = Self.authError(error)
                lastError = failure
                throw failure
            }
        }
        signOut()
        await waitUntilSignedOut()
    }

    /// Refreshes the tokens now; a success clears ``lastError``.
    ///
    /// - Throws: ``ChappieAuthError`` only (a store failure is `.unknown` with its message); when the
    ///   refresh token is dead the session moves to `.reauthenticationRequired` and drops
    ///   ``accountInfo`` first. The stored account (its sealed tokens, name and usage history) stays,
    ///   so `chappie refresh NAME` can try once more.
    public func refreshAuth() async throws(ChappieAuthError) {
        await waitUntilRestored()
        let store = try await openedStore()
        let signOuts = self.signOuts
        let refresher = TokenRefresher(store: store, oauth: oauth, margin: configuration.refreshMargin)
        let name = configuration.account
        // In a task of its own: a refresh the issuer may already have answered by rotating the
        // token is stored whatever the caller does. Cancelled, the caller is let go at once; a
        // refresh not yet sent is not started (the refresher checks), and the session takes the
        // outcome of one that was when it ends.
        let cancelled = ChappieAuthError.networkFailure(
            "the refresh was cancelled; one already sent to the issuer is finished and stored in the background")
        if Task.isCancelled { throw cancelled }
        let refresh = Task { try await refresher.validCredentials(for: try await store.account(named: name), force: true) }
        let under = Task { _ = await refresh.result }
        refreshing = under
        defer { if refreshing == under { refreshing = nil } }
        guard let outcome = await refresh.resultUnlessCancelled() else {
            Task {
                let outcome = await refresh.result
                // Only what the issuer answered is news; a refresh stopped before it was sent is not.
                if case .failure(let error) = outcome, !(error is ChappieAuthError) { return }
                // Signed out meanwhile: the refresh does not sign the session in again.
                if signOuts == self.signOuts { self.settle(outcome) }
            }
            throw cancelled
        }
        guard signOuts == self.signOuts else { throw ChappieAuthError.missingRefreshToken }
        if let error = settle(outcome) { throw error }
    }

    /// Takes a refresh's outcome into the session; returns its failure.
    @discardableResult
    private func settle(_ outcome: Result<TokenRefresher.Fresh, any Error>) -> ChappieAuthError? {
        switch outcome {
        case .success(let fresh):
            accountInfo = fresh.account.info
            lastError = nil
            state = .signedIn(expiresAt: fresh.expiresAt)
            return nil
        case .failure(let error):
            let error = Self.authError(error)
            fail(error)
            return error
        }
    }

    /// A refresh's failure as an auth error: no stored account, or one whose credential does not
    /// open, is `.missingRefreshToken` (sign in again); any other store failure is `.unknown` with
    /// its message, and keeps the session as it is.
    private static func authError(_ error: any Error) -> ChappieAuthError {
        switch error {
        case let error as ChappieAuthError: error
        case let error as StoreError where error.code == .notFound || error.code == .credentialUnreadable: .missingRefreshToken
        default: .unknown(ChappieClientError.storeUnavailable(error).errorDescription ?? "\(error)")
        }
    }

    private func fail(_ error: ChappieAuthError) {
        deviceLinkState = .idle
        lastError = error
        if error.requiresReauthentication {
            accountInfo = nil
            state = .reauthenticationRequired
        } else if case .signedIn = state {
            // Keep the session: a retry is possible.
        } else {
            state = .failed(error.errorDescription ?? "\(error)")
        }
    }
}

/// Entry points of the SDK.
public enum Chappie {
    /// A sign-in session for the configured account slot; it reads the stored session in the
    /// background (``ChappieAuthSession/isRestoring``).
    @MainActor
    public static func authSession(configuration: ChappieConfiguration = ChappieConfiguration()) -> ChappieAuthSession {
        ChappieAuthSession(configuration: configuration)
    }

    /// A sign-in session for the configured account slot, its stored session read when this
    /// returns; the store is opened off the main actor.
    @MainActor
    public static func openAuthSession(configuration: ChappieConfiguration = ChappieConfiguration()) async -> ChappieAuthSession {
        let session = ChappieAuthSession(configuration: configuration)
        await session.waitUntilRestored()
        return session
    }
}

/// The session's states for any number of observers: each subscriber gets the current state, then
/// every change. A `Mutex`, not the main actor: `states` is read from anywhere.
final class StateBroadcast: Sendable {
    private struct Observers {
        /// `nil` until the session has read the stored state.
        var current: ChappieAuthState?
        var continuations: [UUID: AsyncStream<ChappieAuthState>.Continuation] = [:]
    }

    private let observers = Mutex(Observers())

    /// A new observer's stream, starting with the current state (once there is one).
    func subscribe() -> AsyncStream<ChappieAuthState> {
        let (stream, continuation) = AsyncStream.makeStream(of: ChappieAuthState.self, bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        // Before it is registered: a stream dropped at once leaves no entry behind.
        continuation.onTermination = { [weak self] _ in
            _ = self?.observers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        observers.withLock {
            if let current = $0.current { continuation.yield(current) }
            $0.continuations[id] = continuation
        }
        return stream
    }

    /// Tells every observer the new state.
    func publish(_ state: ChappieAuthState) {
        observers.withLock {
            $0.current = state
            for continuation in $0.continuations.values { continuation.yield(state) }
        }
    }

    deinit {
        observers.withLock { $0.continuations.values.forEach { $0.finish() } }
    }
}

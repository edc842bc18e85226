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
/// lines and services. It restores the slot's stored session when created: ``open(configuration:)``
/// returns once that is read; the synchronous `init` (the seeds' `Chappie.authSession()`) returns at
/// once and reads it in the background, so that opening the store (an Argon2id derivation, a wait
/// for another process's lock) never holds the main actor. ``isRestoring`` says when it is done.
/// Any ``ChappieConfiguration`` works: a local store, or a team pool when the program links
/// `ChappiePool` and sets `StoreOptions.poolBackend`.
///
/// ```swift
/// let session = await ChappieAuthSession.open(configuration: configuration)
/// try await session.startDeviceCodeSignIn()
/// if case .signedIn = session.state { print(session.accountInfo?.email ?? "") }
/// ```
@MainActor
@Observable
public final class ChappieAuthSession {
    /// The sign-in lifecycle stage.
    public private(set) var state: ChappieAuthState = .signedOut {
        didSet { if state != oldValue { observers.publish(state) } }
    }
    /// Progress of a device-code sign-in.
    public private(set) var deviceLinkState: ChappieDeviceLinkState = .idle
    /// Who the signed-in account is.
    public private(set) var accountInfo: ChappieAccountInfo?
    /// The most recent failure, or `nil`. A sign-in the caller cancelled is not a failure.
    public private(set) var lastError: ChappieAuthError?
    /// Whether the stored session is still being read (after the synchronous `init`); ``state`` is
    /// `.signedOut` meanwhile. ``restored()`` waits for the end.
    public private(set) var isRestoring = true

    /// Every state from the current one: each access is a stream of its own, so any number of
    /// observers each see every change (a state set again unchanged is not a change).
    public nonisolated var states: AsyncStream<ChappieAuthState> { observers.subscribe() }

    @ObservationIgnored private nonisolated let observers = StateBroadcast(.signedOut)
    @ObservationIgnored private let configuration: ChappieConfiguration
    @ObservationIgnored private let store: StoreHandle
    @ObservationIgnored private let oauth: OAuthClient
    @ObservationIgnored private var signIn: Task<Void, any Error>?
    @ObservationIgnored private var restoring: Task<Void, Never>?
    /// The removals of ``signOut()``, in order: each waits for the one before it.
    @ObservationIgnored private var removal: Task<Void, Never>?
    /// Counts sign-outs: an answer that arrives after one (a restore, a sign-in's save) is not shown.
    @ObservationIgnored private var signOuts = 0

    /// Creates a session and starts reading the stored account of the configured slot, if any, in
    /// the background (see ``isRestoring``).
    public init(configuration: ChappieConfiguration = ChappieConfiguration()) {
        self.configuration = configuration
        store = StoreHandle(configuration.store)
        oauth = OAuthClient(
            endpoints: configuration.endpoints, http: configuration.endpoints.httpClient(), exchangeTimeout: configuration.callbackTimeout)
        restoring = Task { await self.restore() }
    }

    /// A session whose stored account has been read: ``state`` and ``accountInfo`` are the slot's
    /// when this returns. The store is opened off the main actor.
    public static func open(configuration: ChappieConfiguration = ChappieConfiguration()) async -> ChappieAuthSession {
        let session = ChappieAuthSession(configuration: configuration)
        await session.restored()
        return session
    }

    /// Returns once the stored session has been read (at once when it has).
    public func restored() async {
        await restoring?.value
    }

    /// Reads the slot's stored account into ``state`` and ``accountInfo`` (none for an account that
    /// must be signed in again: its tokens are kept in the store, but the session has no credential).
    private func restore() async {
        defer { isRestoring = false }
        let signOuts = self.signOuts
        let opened: any AccountStore
        do {
            opened = try await store.opened()
        } catch {
            state = .failed(error.localizedDescription)
            return
        }
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
            return try await store.opened()
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
        await restored()
        let store = try await openedStore()
        signIn?.cancel()
        lastError = nil
        state = .signingIn
        let flow = DeviceCodeSignIn(oauth: oauth, pollingTimeout: configuration.deviceCodePollingTimeout)
        let slot = configuration.account
        let signOuts = self.signOuts
        let task = Task { @MainActor in
            let result = try await flow.run { [weak self] progress in
                await MainActor.run {
                    guard let self, self.signOuts == signOuts else { return }
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
            guard self.signOuts == signOuts else { throw ChappieAuthError.cancelledSignIn }
            self.accountInfo = saved.account.info
            self.state = .signedIn(expiresAt: saved.account.accessTokenExpiresAt)
        }
        signIn = task
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
            deviceLinkState = .idle
            let account = await Task { try? await store.account(named: slot) }.value
            if signOuts == self.signOuts { show(account) }
            throw ChappieAuthError.cancelledSignIn
        } catch let error as ChappieAuthError {
            fail(error)
            throw error
        } catch {
            let wrapped = ChappieAuthError.unknown("\(error)")
            fail(wrapped)
            throw wrapped
        }
    }

    /// Forgets the slot's stored credentials and cancels a sign-in in progress.
    ///
    /// The session is signed out when this returns; the account is removed from the store in the
    /// background, after a sign-in's save that was already under way (so that it ends signed out).
    public func signOut() {
        let pending = signIn
        pending?.cancel()
        signIn = nil
        signOuts += 1
        accountInfo = nil
        deviceLinkState = .idle
        state = .signedOut
        let before = removal
        let (store, slot) = (store, configuration.account)
        removal = Task {
            await before?.value
            _ = await pending?.result
            guard let opened = try? await store.opened(), (try? await opened.account(named: slot)) != nil else { return }
            try? await opened.remove(slot)
        }
    }

    /// Returns once every ``signOut()`` so far has removed the account from the store.
    public func signedOut() async {
        await removal?.value
    }

    /// Revokes the slot's refresh token at the issuer (§3.5), then signs out as ``signOut()`` does.
    ///
    /// - Parameter revoking: Whether to revoke first; `false` is ``signOut()``.
    /// - Throws: ``ChappieAuthError`` when the revocation fails (the issuer unreachable or refusing,
    ///   or the stored credential unreadable): then nothing is signed out or removed, and
    ///   ``lastError`` says why. An empty slot has nothing to revoke.
    public func signOut(revoking: Bool) async throws(ChappieAuthError) {
        if revoking {
            await restored()
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
        await signedOut()
    }

    /// Refreshes the tokens now; a success clears ``lastError``.
    ///
    /// - Throws: ``ChappieAuthError`` only (a store failure is `.unknown` with its message); when the
    ///   refresh token is dead the session moves to `.reauthenticationRequired` and drops
    ///   ``accountInfo`` first. The stored account (its sealed tokens, name and usage history) stays,
    ///   so `chappie refresh NAME` can try once more.
    public func refreshAuth() async throws(ChappieAuthError) {
        await restored()
        let store = try await openedStore()
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
        guard let outcome = await refresh.resultUnlessCancelled() else {
            Task {
                let outcome = await refresh.result
                // Only what the issuer answered is news; a refresh stopped before it was sent is not.
                if case .failure(let error) = outcome, !(error is ChappieAuthError) { return }
                self.settle(outcome)
            }
            throw cancelled
        }
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

    /// A sign-in session for the configured account slot, its stored session read.
    @MainActor
    public static func openAuthSession(configuration: ChappieConfiguration = ChappieConfiguration()) async -> ChappieAuthSession {
        await ChappieAuthSession.open(configuration: configuration)
    }
}

/// The session's states for any number of observers: each subscriber gets the current state, then
/// every change. A `Mutex`, not the main actor: `states` is read from anywhere.
final class StateBroadcast: Sendable {
    private struct Observers {
        var current: ChappieAuthState
        var continuations: [UUID: AsyncStream<ChappieAuthState>.Continuation] = [:]
    }

    private let observers: Mutex<Observers>

    init(_ initial: ChappieAuthState) {
        observers = Mutex(Observers(current: initial))
    }

    /// A new observer's stream, starting with the current state.
    func subscribe() -> AsyncStream<ChappieAuthState> {
        let (stream, continuation) = AsyncStream.makeStream(of: ChappieAuthState.self, bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        observers.withLock {
            continuation.yield($0.current)
            $0.continuations[id] = continuation
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.observers.withLock { $0.continuations.removeValue(forKey: id) }
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

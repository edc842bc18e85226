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
/// lines and services. It restores a stored session when created.
///
/// ```swift
/// let session = Chappie.authSession(configuration: configuration)
/// try await session.startDeviceCodeSignIn()
/// if case .signedIn = session.state { print(session.accountInfo?.email ?? "") }
/// ```
@MainActor
@Observable
public final class ChappieAuthSession {
    /// The sign-in lifecycle stage.
    public private(set) var state: ChappieAuthState = .signedOut {
        didSet { continuation.yield(state) }
    }
    /// Progress of a device-code sign-in.
    public private(set) var deviceLinkState: ChappieDeviceLinkState = .idle
    /// Who the signed-in account is.
    public private(set) var accountInfo: ChappieAccountInfo?
    /// The most recent failure, or `nil`.
    public private(set) var lastError: ChappieAuthError?

    /// Every state, starting with the current one.
    @ObservationIgnored public let states: AsyncStream<ChappieAuthState>
    @ObservationIgnored private let continuation: AsyncStream<ChappieAuthState>.Continuation
    @ObservationIgnored private let configuration: ChappieConfiguration
    @ObservationIgnored private let store: SQLiteAccountStore?
    @ObservationIgnored private let oauth: OAuthClient
    @ObservationIgnored private var signIn: Task<Void, any Error>?

    /// Creates a session and restores the stored account of the configured slot, if any.
    public init(configuration: ChappieConfiguration = ChappieConfiguration()) {
        self.configuration = configuration
        (states, continuation) = AsyncStream.makeStream(of: ChappieAuthState.self, bufferingPolicy: .bufferingNewest(16))
        oauth = OAuthClient(
            endpoints: configuration.endpoints, http: configuration.endpoints.httpClient(), exchangeTimeout: configuration.callbackTimeout)
        do {
            store = try StoreOpener.openNow(configuration.store).local
        } catch {
            store = nil
            state = .failed("the credential store cannot be opened: \(error)")
            return
        }
        restore()
    }

    /// Reads the slot's stored account into ``state`` and ``accountInfo`` (none for an account that
    /// must be signed in again: its tokens are kept in the store, but the session has no credential).
    private func restore() {
        let account = store.flatMap { try? $0.accountNow(named: configuration.account) }
        guard let account else {
            accountInfo = nil
            state = .signedOut
            continuation.yield(state)
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

    /// Signs in with the device-code flow and stores the account in the configured slot.
    ///
    /// ``state`` moves to `.signingIn`, `.awaitingDeviceCode` (show its code and URL), then
    /// `.signedIn`. Cancelling the calling task, or ``signOut()``, stops it with `.cancelledSignIn`.
    ///
    /// - Throws: ``ChappieAuthError``: `.expiredDeviceCode`, `.authorizationDenied`,
    ///   `.pollingTimeout` (after ``ChappieConfiguration/deviceCodePollingTimeout``),
    ///   `.callbackTimeout` (after ``ChappieConfiguration/callbackTimeout``), `.cancelledSignIn`, …
    public func startDeviceCodeSignIn() async throws(ChappieAuthError) {
        guard let store else { throw ChappieAuthError.unknown("the credential store cannot be opened") }
        signIn?.cancel()
        lastError = nil
        state = .signingIn
        let flow = DeviceCodeSignIn(oauth: oauth, pollingTimeout: configuration.deviceCodePollingTimeout)
        let slot = configuration.account
        let task = Task { @MainActor in
            let result = try await flow.run { [weak self] progress in
                await MainActor.run {
                    self?.deviceLinkState = progress
                    if case .waitingForApproval(let code, let url, _, _) = progress {
                        self?.state = .awaitingDeviceCode(userCode: code, verificationURL: url)
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
    public func signOut() {
        signIn?.cancel()
        signIn = nil
        if let store, (try? store.accountNow(named: configuration.account)) != nil {
            try? store.removeNow(configuration.account)
        }
        accountInfo = nil
        deviceLinkState = .idle
        state = .signedOut
    }

    /// Revokes the slot's refresh token at the issuer (§3.5), then signs out as ``signOut()`` does.
    ///
    /// - Parameter revoking: Whether to revoke first; `false` is ``signOut()``.
    /// - Throws: ``ChappieAuthError`` when the revocation fails (the issuer unreachable or refusing,
    ///   or the stored credential unreadable): then nothing is signed out or removed, and
    ///   ``lastError`` says why. An empty slot has nothing to revoke.
    public func signOut(revoking: Bool) async throws(ChappieAuthError) {
        if revoking, let store {
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
    }

    /// Refreshes the tokens now; a success clears ``lastError``.
    ///
    /// - Throws: ``ChappieAuthError`` only (a store failure is `.unknown` with its message); when the
    ///   refresh token is dead the session moves to `.reauthenticationRequired` and drops
    ///   ``accountInfo`` first. The stored account (its sealed tokens, name and usage history) stays,
    ///   so `chappie refresh NAME` can try once more.
    public func refreshAuth() async throws(ChappieAuthError) {
        guard let store else {
            fail(.unknown("the credential store cannot be opened"))
            throw ChappieAuthError.unknown("the credential store cannot be opened")
        }
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
        guard let outcome = await Self.unlessCancelled(refresh) else {
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

    /// The task's result, or `nil` as soon as the caller is cancelled. The task is cancelled then
    /// too, and goes on as far as it must (a refresh already sent is stored).
    private static func unlessCancelled<T: Sendable>(_ task: Task<T, any Error>) async -> Result<T, any Error>? {
        let waiting = Mutex<CheckedContinuation<Result<T, any Error>?, Never>?>(nil)
        let resume: @Sendable (Result<T, any Error>?) -> Void = { result in waiting.withLock { $0.take() }?.resume(returning: result) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiting.withLock { $0 = continuation }
                if Task.isCancelled { resume(nil) }
                Task { resume(await task.result) }
            }
        } onCancel: {
            task.cancel()
            resume(nil)
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
        lastError = error
        deviceLinkState = .idle
        if error.requiresReauthentication {
            accountInfo = nil
            state = .reauthenticationRequired
        } else if error == .cancelledSignIn {
            // Back to what the store holds: signed in, signed out, or to be signed in again.
            restore()
        } else if case .signedIn = state {
            // Keep the session: a retry is possible.
        } else {
            state = .failed(error.errorDescription ?? "\(error)")
        }
    }
}

/// Entry points of the SDK.
public enum Chappie {
    /// A sign-in session for the configured account slot.
    @MainActor
    public static func authSession(configuration: ChappieConfiguration = ChappieConfiguration()) -> ChappieAuthSession {
        ChappieAuthSession(configuration: configuration)
    }
}

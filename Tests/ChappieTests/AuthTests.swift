import Chappie
import ChappieEmulator
import ChappieNet
import ChappieStore
import ChappieTestSupport
import Foundation
import Synchronization
import Testing

@Suite("The SDK's auth: OAuth wire, device-code sign-in, refresh discipline, auth session")
struct AuthTests {
    /// A session slot `work` with its store in `home`, against the emulator.
    private func sessionConfiguration(_ emulator: RunningEmulator, home: URL) throws -> ChappieConfiguration {
        ChappieConfiguration(
            account: try AccountName("work"), store: StoreOptions(home: home.path, environment: [:]), endpoints: try endpoints(emulator))
    }

    private func endpoints(_ emulator: RunningEmulator) throws -> ChappieEndpoints {
        try ChappieEndpoints(issuer: emulator.baseURL.absoluteString, backend: emulator.backendURL.absoluteString)
    }

    private func autoApprove(_ delay: Duration = .zero, accessTokenLifetime: Duration = .seconds(3600)) -> EmulatorConfiguration {
        var configuration = EmulatorConfiguration()
        configuration.autoApprove = true
        configuration.autoApproveDelay = delay
        configuration.deviceCodePollInterval = 1
        configuration.accessTokenLifetime = accessTokenLifetime
        return configuration
    }

    @Test("Device-code sign-in reports its stages and decodes the account")
    func deviceCodeSignIn() async throws {
        try await withEmulator(autoApprove(.milliseconds(200))) { emulator in
            let oauth = OAuthClient(endpoints: try endpoints(emulator), http: emulator.client)
            let stages = Stages()
            let result = try await DeviceCodeSignIn(oauth: oauth).run { await stages.append($0) }
            #expect(result.account.email == "user1@example.com")
            #expect(result.account.plan == .plus)
            #expect(result.accessTokenExpiresAt != nil)
            let seen = await stages.names
            #expect(seen.first == "requestingCode")
            #expect(seen.contains("waitingForApproval"))
            #expect(seen.suffix(2) == ["exchangingCode", "completed"])
        }
    }

    @Test("Polling past chappie's own limit is .pollingTimeout; cancelling gives .cancelledSignIn")
    func pollingTimeoutAndCancellation() async throws {
        try await withEmulator { emulator in
            let oauth = OAuthClient(endpoints: try endpoints(emulator), http: emulator.client)
            await #expect(throws: ChappieAuthError.pollingTimeout) {
                _ = try await DeviceCodeSignIn(oauth: oauth, pollingTimeout: .milliseconds(1500)).run()
            }
            let task = Task { try await DeviceCodeSignIn(oauth: oauth).run() }
            try await Task.sleep(for: .milliseconds(300))
            task.cancel()
            await #expect(throws: ChappieAuthError.cancelledSignIn) { _ = try await task.value }
        }
    }

    @Test("The server's expiry makes .expiredDeviceCode: its expires_at passing, or its error code before then")
    func serverExpiry() async throws {
        var short = EmulatorConfiguration()
        short.deviceCodeLifetime = .milliseconds(1500)
        short.deviceCodePollInterval = 1
        try await withEmulator(short) { emulator in
            let oauth = OAuthClient(endpoints: try endpoints(emulator), http: emulator.client)
            let code = try await oauth.requestDeviceCode()
            // The server's expires_at less its Date (1.5 s, in whole seconds; the Date header may lag
            // by seconds on a loaded machine), not the client's 15 minutes.
            let lifetime = try #require(code.lifetime)
            #expect(lifetime < .seconds(60))
            await #expect(throws: ChappieAuthError.expiredDeviceCode) { _ = try await DeviceCodeSignIn(oauth: oauth).run() }
        }
        // The service's answers (docs/protocol.md §1): an expired code, and one it no longer knows.
        for (status, code) in [(403, "deviceauth_user_code_expired"), (404, "deviceauth_not_found"), (400, "deviceauth_expired")] {
            try await withEmulator { emulator in
                let body = #"{"error":{"message":"Device authorization code has expired.","code":"\#(code)"}}"#
                try await emulator.failNext("/api/accounts/deviceauth/token", status: status, body: body)
                let oauth = OAuthClient(endpoints: try endpoints(emulator), http: emulator.client)
                await #expect(throws: ChappieAuthError.expiredDeviceCode, "\(code)") { _ = try await DeviceCodeSignIn(oauth: oauth).run() }
                // At once: the first poll's answer ends the sign-in.
                #expect(try await emulator.json(emulator.request("/_emulator/stats")).json.int("requests", "/api/accounts/deviceauth/token") == 1)
            }
        }
    }

    @Test("A user who refuses the code while chappie polls gives .authorizationDenied with the server's message")
    func denial() async throws {
        var configuration = EmulatorConfiguration()
        configuration.deviceCodePollInterval = 1
        try await withEmulator(configuration) { emulator in
            let oauth = OAuthClient(endpoints: try endpoints(emulator), http: emulator.client)
            let denier = Task {
                try await DeviceCodeSignIn(oauth: oauth).run { state in
                    guard case .waitingForApproval(let userCode, _, _, _) = state else { return }
                    _ = try? await emulator.client.execute(
                        emulator.request(
                            "/_emulator/device/deny", method: .post, json: #"{"user_code":"\#(userCode)","reason":"Not me."}"#))
                }
            }
            await #expect(throws: ChappieAuthError.authorizationDenied("Not me.")) { _ = try await denier.value }
        }
        // The documented rule: access_denied, or any code ending in denied or declined; others are pending.
        for code in ["access_denied", "deviceauth_user_declined", "consent_denied"] {
            try await withEmulator(configuration) { emulator in
                let body = #"{"error":{"message":"The user said no.","code":"\#(code)"}}"#
                try await emulator.failNext("/api/accounts/deviceauth/token", status: 403, body: body)
                let oauth = OAuthClient(endpoints: try endpoints(emulator), http: emulator.client)
                await #expect(throws: ChappieAuthError.authorizationDenied("The user said no."), "\(code)") {
                    _ = try await DeviceCodeSignIn(oauth: oauth).run()
                }
            }
        }
    }

    @Test("A code exchange that outlasts its limit is .callbackTimeout (start a new flow), not a network failure")
    func callbackTimeout() async throws {
        try await withEmulator(autoApprove()) { emulator in
            let fault = #"{"kind":"latency","ms":3000,"path":"/oauth/token"}"#
            try await emulator.addFault(fault)
            let oauth = OAuthClient(endpoints: try endpoints(emulator), http: emulator.client, exchangeTimeout: .milliseconds(300))
            await #expect(throws: ChappieAuthError.callbackTimeout) { _ = try await DeviceCodeSignIn(oauth: oauth).run() }
            #expect(ChappieAuthError.callbackTimeout.recovery == .signInAgain)
            #expect(ChappieAuthError.pollingTimeout.recovery == .signInAgain)
        }
    }

    @Test("A token-endpoint failure carries the body, tokens redacted; its description shows code and description")
    func failureBody() async throws {
        try await withEmulator { emulator in
            let body =
                #"{"error":"invalid_grant","error_description":"bad","refresh_token":"rt_secret_value","hint":"eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl"}"#
            try await emulator.failNext("/oauth/token", status: 400, body: body)
            let oauth = OAuthClient(endpoints: try endpoints(emulator), http: emulator.client)
            do throws(ChappieAuthError) {
                _ = try await oauth.refresh("rt_anything")
                Issue.record("no error")
            } catch {
                guard case .tokenExchangeFailed(400, let kept) = error else {
                    Issue.record("\(error)")
                    return
                }
                #expect(kept.contains(#""error":"invalid_grant""#))
                #expect(!kept.contains("rt_secret_value"))
                #expect(!kept.contains("eyJhbGciOi"))
                #expect(kept.contains(#""refresh_token":"<redacted>""#))
                #expect(error.oauthErrorCode == "invalid_grant")
                #expect(error.errorDescription == "The token endpoint answered HTTP 400: invalid_grant: bad")
                // The description, as an account's last error keeps it, reads back to the same class.
                let reread = try #require(ChappieAuthError(tokenEndpointDescription: error.errorDescription ?? ""))
                #expect(reread.oauthErrorCode == "invalid_grant")
                #expect(reread.requiresReauthentication)
            }
        }
    }

    @Test(
        "Token-endpoint errors are classified as docs/protocol.md and docs/errors.md say",
        arguments: [
            ("refresh-reused-401.json", 401, "refresh_token_reused", ChappieErrorRecovery.signInAgain),
            ("refresh-expired-401.json", 401, "refresh_token_expired", .signInAgain),
            ("refresh-invalidated-401.json", 401, "refresh_token_invalidated", .signInAgain),
            ("token-invalid-grant-400.json", 400, "invalid_grant", .signInAgain),
        ])
    func errorClassification(_ fixture: String, _ status: Int, _ code: String, _ recovery: ChappieErrorRecovery) async throws {
        try await withEmulator { emulator in
            let body = String(decoding: try Fixtures.data(fixture), as: UTF8.self)
            try await emulator.failNext("/oauth/token", status: status, body: body)
            let oauth = OAuthClient(endpoints: try endpoints(emulator), http: emulator.client)
            do {
                _ = try await oauth.refresh("rt_anything")
                Issue.record("no error")
            } catch let error as ChappieAuthError {
                #expect(error.oauthErrorCode == code)
                #expect(error.requiresReauthentication)
                #expect(error.recovery == recovery)
            }
        }
    }

    @Test("5xx and network failures are transient; invalid_client is permanent")
    func transientAndPermanent() async throws {
        try await withEmulator { emulator in
            try await emulator.failNext("/oauth/token", status: 503)
            let oauth = OAuthClient(endpoints: try endpoints(emulator), http: emulator.client)
            do {
                _ = try await oauth.refresh("rt_x")
                Issue.record("no error")
            } catch let error as ChappieAuthError {
                #expect(!error.requiresReauthentication)
                #expect(error.recovery == .retry(.after(seconds: 5)))
            }
        }
        let dead = try ChappieEndpoints(issuer: "http://127.0.0.1:\(try closedLoopbackPort())", backend: nil)
        do {
            _ = try await OAuthClient(endpoints: dead, http: ChappieHTTPClient()).refresh("rt_x")
            Issue.record("no error")
        } catch {
            guard case .networkFailure = error else {
                Issue.record("\(error)")
                return
            }
            #expect(error.recovery == .retry(.now))
        }
        #expect(
            ChappieAuthError.tokenExchangeFailed(statusCode: 401, body: #"{"error":"invalid_client","error_description":"nope"}"#).recovery
                == .permanent(.fixConfiguration))
        #expect(ChappieAuthError.missingRefreshToken.requiresReauthentication)
        #expect(!ChappieAuthError.tokenExchangeFailed(statusCode: 500, body: "server_error").requiresReauthentication)
    }

    /// An account signed in at an emulator whose access tokens live 60 s, in a new store.
    private func withSignedInAccount(
        _ body: (RunningEmulator, any AccountStore, OAuthClient, Account) async throws -> Void
    ) async throws {
        try await withEmulator(autoApprove(accessTokenLifetime: .seconds(60))) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-sdk")
            defer { try? FileManager.default.removeItem(at: home) }
            let store = try await StoreOpener.open(StoreOptions(home: home.path, environment: [:])).local!
            let oauth = OAuthClient(endpoints: try endpoints(emulator), http: emulator.client)
            let result = try await DeviceCodeSignIn(oauth: oauth).run()
            let account = try await store.save(
                info: result.account, credentials: result.credentials, accessTokenExpiresAt: result.accessTokenExpiresAt,
                refreshedAt: Date(), name: nil, event: .signedIn
            ).account
            try await body(emulator, store, oauth, account)
        }
    }

    @Test("The refresher skips the call when another holder already refreshed")
    func refresherSkips() async throws {
        try await withSignedInAccount { emulator, store, oauth, account in
            // A margin longer than the token's life: every call wants to refresh.
            let refresher = TokenRefresher(store: store, oauth: oauth, margin: .seconds(120))
            let first = try await refresher.validCredentials(for: account)
            #expect(first.outcome == .refreshed)
            // A caller still holding the old account (and tokens) sees the new ones instead of redeeming again.
            let stale = try await TokenRefresher(store: store, oauth: oauth, margin: .seconds(30)).validCredentials(for: account, force: true)
            #expect(stale.outcome == .refreshed || stale.outcome == .adopted)
            let stats = try await emulator.json(emulator.request("/_emulator/stats")).json
            #expect(stats.int("refresh", "reuse_detected") == 0)
        }
    }

    @Test("The refresher tells its watcher what happened: a redemption once committed, the issuer's refusal with its code, nothing for a valid token")
    func refresherEvents() async throws {
        try await withSignedInAccount { emulator, store, oauth, account in
            let events = EventLog()
            var refresher = TokenRefresher(store: store, oauth: oauth, margin: .seconds(30))
            refresher.observe = { events.append($0) }
            _ = try await refresher.validCredentials(for: account)
            #expect(events.all.isEmpty, "a valid token is no event")
            let refreshed = try await refresher.validCredentials(for: account, force: true)
            #expect(events.all == [.redeemed])
            try await emulator.failNext("/oauth/token", status: 401, body: #"{"error":"refresh_token_reused","error_description":"already used"}"#)
            await #expect(throws: ChappieAuthError.self) { _ = try await refresher.validCredentials(for: refreshed.account, force: true) }
            #expect(events.all == [.redeemed, .refused(oauthError: "refresh_token_reused")])
            #expect(try await store.account(id: account.id).status == .reauthRequired)
            // Met again, the signed-out account fails at once: the issuer is not asked, and nothing is told.
            await #expect(throws: ChappieAuthError.self) { _ = try await refresher.validCredentials(for: refreshed.account, force: true) }
            #expect(events.all.count == 2)
        }
    }

    @Test("ChappieAuthSession signs in, restores, refreshes and signs out, publishing its states")
    func authSession() async throws {
        try await withEmulator(autoApprove(.milliseconds(100))) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-session")
            defer { try? FileManager.default.removeItem(at: home) }
            let configuration = try sessionConfiguration(emulator, home: home)
            try await SessionScenario.run(configuration)
        }
    }
    @Test("signOut(revoking:) revokes at the issuer before it signs out; a failed revocation signs nothing out")
    func signOutRevoking() async throws {
        try await withEmulator(autoApprove()) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-session")
            defer { try? FileManager.default.removeItem(at: home) }
            let configuration = try sessionConfiguration(emulator, home: home)
            try await SessionRevocation.run(configuration, emulator: emulator)
        }
    }

    @Test(
        "A refreshAuth() cancelled while its request is at the issuer returns at once; the refresh is stored in the background and the session takes it"
    )
    func cancelledRefreshAuth() async throws {
        try await withEmulator(autoApprove()) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-session")
            defer { try? FileManager.default.removeItem(at: home) }
            let configuration = try sessionConfiguration(emulator, home: home)
            try await SessionCancelledRefresh.run(configuration, emulator: emulator)
        }
    }

    @Test(
        "A cancelled second sign-in leaves the session signed in; a failed refresh keeps it signed in and a success clears lastError; a dead grant moves it to reauthenticationRequired without accountInfo, the stored account kept"
    )
    func sessionReauthentication() async throws {
        try await withEmulator(autoApprove()) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-session")
            defer { try? FileManager.default.removeItem(at: home) }
            let configuration = try sessionConfiguration(emulator, home: home)
            func fault(_ status: Int, _ body: String) async throws {
                try await emulator.failNext("/oauth/token", status: status, body: body)
            }
            let slowCode = #"{"kind":"latency","ms":3000,"path":"/api/accounts/deviceauth/usercode"}"#
            try await SessionReauthentication.run(configuration, fault: fault) {
                try await emulator.addFault(slowCode)
            }
        }
    }
}

/// Signing out with revocation, on the main actor.
@MainActor
enum SessionRevocation {
    static func run(_ configuration: ChappieConfiguration, emulator: RunningEmulator) async throws {
        let session = Chappie.authSession(configuration: configuration)
        try await session.startDeviceCodeSignIn()
        let store = try await StoreOpener.open(configuration.store).local!
        let refreshToken = try await store.credentials(for: try await store.account(named: configuration.account)).refreshToken
        try await emulator.failNext("/oauth/revoke", status: 503)
        do {
            try await session.signOut(revoking: true)
            Issue.record("the failed revocation signed out")
        } catch {
            guard case .tokenExchangeFailed(503, _) = error else {
                Issue.record("\(error)")
                return
            }
        }
        guard case .signedIn = session.state else {
            Issue.record("state \(session.state)")
            return
        }
        #expect(session.lastError != nil)
        #expect((try? await store.account(named: configuration.account)) != nil)

        try await session.signOut(revoking: true)
        #expect(session.state == .signedOut)
        #expect((try? await store.account(named: configuration.account)) == nil)
        // The issuer revoked it: the refresh token no longer works.
        let oauth = OAuthClient(endpoints: configuration.endpoints, http: emulator.client)
        do {
            _ = try await oauth.refresh(refreshToken)
            Issue.record("a revoked refresh token still works")
        } catch {
            #expect(error.requiresReauthentication)
        }
        // An empty slot has nothing to revoke.
        try await session.signOut(revoking: true)
    }
}

/// A refresh cancelled while the issuer holds it, on the main actor.
@MainActor
enum SessionCancelledRefresh {
    static func run(_ configuration: ChappieConfiguration, emulator: RunningEmulator) async throws {
        let session = Chappie.authSession(configuration: configuration)
        try await session.startDeviceCodeSignIn()
        let store = try await StoreOpener.open(configuration.store).local!
        let account = try await store.account(named: configuration.account)
        let before = try await store.credentials(for: account).refreshToken
        func stats() async throws -> JSONDocument { try await emulator.json(emulator.request("/_emulator/stats")).json }
        // The issuer holds the refresh until released; the caller gives up once the request is there.
        try await emulator.addFault(#"{"kind": "hold", "path": "/oauth/token"}"#)
        let refresh = Task { try await session.refreshAuth() }
        var waited = 0
        while try await stats().int("held") != 1, waited < 6_000 {
            try await Task.sleep(for: .milliseconds(5))
            waited += 1
        }
        refresh.cancel()
        do {
            try await refresh.value
            Issue.record("a cancelled refreshAuth() returned normally")
        } catch {
            guard case .retry = (error as? ChappieAuthError)?.recovery else {
                Issue.record("a cancelled refresh is to be tried again: \(error)")
                return
            }
        }
        // Let go before the issuer answered: nothing redeemed yet.
        #expect(try await stats().int("refresh", "redemptions") == 0)
        _ = try await emulator.json(emulator.request("/_emulator/release", method: .post))
        // The refresh goes on, and is stored.
        var stored = before
        for _ in 0..<600 {
            try await Task.sleep(for: .milliseconds(50))
            stored = try await store.credentials(for: store.account(named: configuration.account)).refreshToken
            if stored != before { break }
        }
        #expect(stored != before, "the refresh was not stored")
        #expect(try await stats().int("refresh", "redemptions") == 1)
        #expect(try await stats().int("refresh", "reuse_detected") == 0)
        for _ in 0..<100 where session.lastError != nil { try await Task.sleep(for: .milliseconds(20)) }
        guard case .signedIn = session.state else {
            Issue.record("state \(session.state)")
            return
        }
        #expect(session.lastError == nil)
    }
}

/// The reauthentication scenario, on the main actor.
@MainActor
enum SessionReauthentication {
    static func run(
        _ configuration: ChappieConfiguration, fault: (Int, String) async throws -> Void, slowSignIn: () async throws -> Void
    ) async throws {
        let session = Chappie.authSession(configuration: configuration)
        try await session.startDeviceCodeSignIn()
        // A second sign-in, cancelled while it asks for a code, leaves the session signed in.
        try await slowSignIn()
        let again = Task { try await session.startDeviceCodeSignIn() }
        for _ in 0..<10_000 where session.state != .signingIn { await Task.yield() }
        again.cancel()
        await #expect(throws: ChappieAuthError.cancelledSignIn) { try await again.value }
        guard case .signedIn = session.state else {
            Issue.record("after a cancelled sign-in: \(session.state)")
            return
        }
        #expect(session.accountInfo?.email == "user1@example.com")

        try await fault(500, #"{"error":"server_error"}"#)
        await #expect(throws: ChappieAuthError.self) { try await session.refreshAuth() }
        #expect(session.lastError?.recovery == .retry(.after(seconds: 5)))
        guard case .signedIn = session.state else {
            Issue.record("state \(session.state)")
            return
        }
        try await session.refreshAuth()
        #expect(session.lastError == nil)

        try await fault(400, #"{"error":"invalid_grant","error_description":"revoked"}"#)
        do {
            try await session.refreshAuth()
            Issue.record("no error")
        } catch {
            #expect(error.requiresReauthentication)
        }
        #expect(session.state == .reauthenticationRequired)
        #expect(session.accountInfo == nil)
        #expect(session.lastError?.oauthErrorCode == "invalid_grant")
        let restored = await Chappie.openAuthSession(configuration: configuration)
        #expect(restored.state == .reauthenticationRequired)
        #expect(restored.accountInfo == nil)
        // The account, its name and its sealed tokens stay for `chappie refresh NAME` to try again.
        let store = try await StoreOpener.open(configuration.store).local!
        let account = try await store.account(named: configuration.account)
        #expect(account.status == .reauthRequired)
        #expect(account.info.email == "user1@example.com")
    }
}

/// The auth-session scenario, on the main actor where sessions live.
@MainActor
enum SessionScenario {
    static func run(_ configuration: ChappieConfiguration) async throws {
        let session = await Chappie.openAuthSession(configuration: configuration)
        #expect(session.state == .signedOut)
        // Two observers, subscribed before the sign-in: each sees every state from the current one,
        // once (no split between them, no repeated .signedOut).
        func observe() -> Task<[ChappieAuthState], Never> {
            let states = session.states
            return Task {
                var seen: [ChappieAuthState] = []
                for await state in states {
                    seen.append(state)
                    if case .signedIn = state { break }
                }
                return seen
            }
        }
        let (first, second) = (observe(), observe())
        try await session.startDeviceCodeSignIn()
        guard case .signedIn = session.state else {
            Issue.record("state \(session.state)")
            return
        }
        #expect(session.accountInfo?.email == "user1@example.com")
        for observer in [first, second] {
            let seen = await observer.value
            #expect(seen.first == .signedOut)
            #expect(seen.filter { $0 == .signedOut }.count == 1)
            #expect(seen.contains(.signingIn))
            #expect(seen.contains { if case .awaitingDeviceCode = $0 { true } else { false } })
        }
        // A late observer starts from the current state.
        for await state in session.states {
            #expect(state == session.state)
            break
        }
        #expect(session.deviceLinkState == .completed)
        // The synchronous init (docs/sdk.md) reads the stored session in the background.
        let restored = Chappie.authSession(configuration: configuration)
        await restored.waitUntilRestored()
        #expect(!restored.isRestoring)
        #expect(restored.accountInfo?.email == "user1@example.com")
        try await restored.refreshAuth()
        restored.signOut()
        #expect(restored.state == .signedOut)
        await restored.waitUntilSignedOut()
        #expect(await Chappie.openAuthSession(configuration: configuration).state == .signedOut)
        await #expect(throws: ChappieAuthError.missingRefreshToken) { try await restored.refreshAuth() }
    }
}

/// Collects the names of device-link stages.
actor Stages {
    private(set) var names: [String] = []

    func append(_ state: ChappieDeviceLinkState) {
        names.append(String(describing: state).prefix { $0 != "(" }.description)
    }
}

/// The events a refresher told, in order.
private final class EventLog: Sendable {
    private let events = Mutex<[TokenRefresher.Event]>([])

    func append(_ event: TokenRefresher.Event) {
        events.withLock { $0.append(event) }
    }

    var all: [TokenRefresher.Event] { events.withLock { $0 } }
}

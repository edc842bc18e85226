import Chappie
import ChappieEmulator
import ChappieNet
import ChappiePool
import ChappieStore
import ChappieTestSupport
import Foundation
import GRDB
import Testing

@Suite("ChappieAuthSession as docs/sdk.md describes it: plan changes, sign-out races, cancelled sign-ins, a store that fails, a team pool")
struct AuthSessionPromisesTests {
    private func emulatorConfiguration() -> EmulatorConfiguration {
        var configuration = EmulatorConfiguration()
        configuration.autoApprove = true
        configuration.deviceCodePollInterval = 1
        return configuration
    }

    private func configuration(_ emulator: RunningEmulator, store: StoreOptions) throws -> ChappieConfiguration {
        ChappieConfiguration(
            account: try AccountName("work"), store: store,
            endpoints: try ChappieEndpoints(issuer: emulator.baseURL.absoluteString, backend: emulator.backendURL.absoluteString))
    }

    @Test("refreshAuth() after a plan upgrade publishes the new plan; the store has it, and the audit log says from what to what")
    func planChange() async throws {
        try await withEmulator(emulatorConfiguration()) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-plan")
            defer { try? FileManager.default.removeItem(at: home) }
            let configuration = try configuration(emulator, store: StoreOptions(home: home.path, environment: [:]))
            try await SessionPlanChange.run(configuration) { accountID in
                // The emulator's control route: the account's next tokens name the new plan.
                let reply = try await emulator.client.execute(
                    emulator.request("/_emulator/accounts/\(accountID)/usage", method: .post, json: #"{"plan":"pro"}"#))
                #expect(reply.status == 200)
            }
        }
    }

    @Test("A signOut() while a sign-in saves its tokens ends signed out, the account not stored; a cancelled sign-in leaves lastError alone")
    func signOutDuringSave() async throws {
        try await withEmulator(emulatorConfiguration()) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-signout")
            defer { try? FileManager.default.removeItem(at: home) }
            let configuration = try configuration(emulator, store: StoreOptions(home: home.path, environment: [:]))
            try await SessionSignOutRace.run(configuration) {
                try await emulator.addFault(#"{"kind":"latency","ms":3000,"path":"/api/accounts/deviceauth/usercode"}"#)
            }
        }
    }

    @Test("A signOut() while refreshAuth() is at the issuer ends signed out: the refresh does not sign the session in again")
    func refreshThenSignOut() async throws {
        try await withEmulator(emulatorConfiguration()) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-refresh-signout")
            defer { try? FileManager.default.removeItem(at: home) }
            try await SessionRefreshThenSignOut.run(
                try configuration(emulator, store: StoreOptions(home: home.path, environment: [:])), emulator: emulator)
        }
    }

    @Test(
        "Chappie.authSession() says signed in before it returns, and signOut() right after it removes the account before it returns, while the keyed open still waits"
    )
    func synchronousRestoreAndSignOut() async throws {
        try await withEmulator(emulatorConfiguration()) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-sync-session")
            defer { try? FileManager.default.removeItem(at: home) }
            try await SessionSynchronousAnswers.run(try configuration(emulator, store: StoreOptions(home: home.path, environment: [:])), home: home)
        }
    }

    @Test("A store that cannot be opened is the .failed state, and each call says why")
    func failedStore() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-failed")
        defer { try? FileManager.default.removeItem(at: home) }
        // The data directory is a regular file: nothing can be stored there.
        let file = home.appendingPathComponent("not-a-directory")
        try Data("x".utf8).write(to: file)
        var configuration = ChappieConfiguration(store: StoreOptions(home: file.path, environment: [:]))
        configuration.account = try AccountName("work")
        try await SessionFailedStore.run(configuration)
    }

    @Test("On a team pool the session signs in, restores and refreshes as on one machine")
    func teamPool() async throws {
        try await withEmulator(emulatorConfiguration()) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-pool-session")
            defer { try? FileManager.default.removeItem(at: home) }
            var store = StoreOptions(home: home.path, environment: [:], storeURL: try await SharedPostgres.database().url, machine: "laptop")
            // In-process beside the whole suite, the pool's migration can wait its turn for long.
            store.poolBackend = TeamPool(deadline: .seconds(300))
            try await SessionOnPool.run(try configuration(emulator, store: store))
        }
    }
}

@MainActor
enum SessionPlanChange {
    static func run(_ configuration: ChappieConfiguration, upgrade: (String) async throws -> Void) async throws {
        let session = await Chappie.openAuthSession(configuration: configuration)
        try await session.startDeviceCodeSignIn()
        #expect(session.accountInfo?.plan == .plus)
        try await upgrade(try #require(session.accountInfo?.accountID))
        try await session.refreshAuth()
        #expect(session.accountInfo?.plan == .pro)
        let store = try await StoreOpener.open(configuration.store).store
        #expect(try await store.account(named: configuration.account).info.plan == .pro)
        let changes = try await store.events().filter { $0.kind == AuditEventKind.identityChanged.rawValue }
        #expect(changes.map(\.detail) == ["plan plus → pro"])
        // A session opened later restores the new plan.
        #expect(await Chappie.openAuthSession(configuration: configuration).accountInfo?.plan == .pro)
    }
}

@MainActor
enum SessionSignOutRace {
    static func run(_ configuration: ChappieConfiguration, slowSignIn: () async throws -> Void) async throws {
        let session = await Chappie.openAuthSession(configuration: configuration)
        let store = try await StoreOpener.open(configuration.store).local!
        // Holding the key lock keeps the sign-in's save waiting once the issuer has answered.
        var lock: FileLock? = try await FileLock.acquire(store.keyLockURL, mode: .exclusive)
        let signIn = Task { try await session.startDeviceCodeSignIn() }
        while session.deviceLinkState != .completed {
            guard session.lastError == nil else {
                Issue.record("the sign-in failed: \(String(describing: session.lastError))")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        session.signOut()
        lock = nil
        await #expect(throws: ChappieAuthError.cancelledSignIn) { try await signIn.value }
        await session.waitUntilSignedOut()
        #expect(session.state == .signedOut)
        #expect(session.accountInfo == nil)
        #expect((try? await store.account(named: configuration.account)) == nil)
        #expect(session.lastError == nil)
        _ = lock

        // With nothing under way, signOut() removes the stored account before it returns (docs/sdk.md, `signOut()`).
        try await session.startDeviceCodeSignIn()
        #expect((try? await store.account(named: configuration.account)) != nil)
        session.signOut()
        #expect((try? store.accountNow(named: configuration.account)) == nil)

        // signOut() while a sign-in asks for its code cancels it.
        try await slowSignIn()
        let running = Task { try await session.startDeviceCodeSignIn() }
        while session.state != .signingIn { try await Task.sleep(for: .milliseconds(10)) }
        session.signOut()
        await #expect(throws: ChappieAuthError.cancelledSignIn) { try await running.value }
        #expect(session.state == .signedOut)
        #expect(session.lastError == nil)

        // A sign-in cancelled by its caller is not a failure.
        try await slowSignIn()
        let cancelled = Task { try await session.startDeviceCodeSignIn() }
        while session.state != .signingIn { try await Task.sleep(for: .milliseconds(10)) }
        cancelled.cancel()
        await #expect(throws: ChappieAuthError.cancelledSignIn) { try await cancelled.value }
        #expect(session.lastError == nil)
        #expect(session.state == .signedOut)
    }
}

/// A refresh at the issuer when the session signs out: the session stays signed out, the account
/// is removed once the refresh is stored.
@MainActor
enum SessionRefreshThenSignOut {
    static func run(_ configuration: ChappieConfiguration, emulator: RunningEmulator) async throws {
        let session = await Chappie.openAuthSession(configuration: configuration)
        try await session.startDeviceCodeSignIn()
        try await emulator.addFault(#"{"kind": "hold", "path": "/oauth/token"}"#)
        let refresh = Task { try await session.refreshAuth() }
        func held() async throws -> Int { try await emulator.json(emulator.request("/_emulator/stats")).json.int("held") ?? 0 }
        while try await held() != 1 { try await Task.sleep(for: .milliseconds(10)) }
        session.signOut()
        #expect(session.state == .signedOut)
        _ = try await emulator.json(emulator.request("/_emulator/release", method: .post))
        await #expect(throws: ChappieAuthError.self) { try await refresh.value }
        await session.waitUntilSignedOut()
        #expect(session.state == .signedOut)
        #expect(session.accountInfo == nil)
        let store = try await StoreOpener.open(configuration.store).store
        #expect((try? await store.account(named: configuration.account)) == nil)
    }
}

/// The session's synchronous answers (issue 40, items 12 and 13): what the store holds, read without
/// its key, and a removal without it, while the keyed open waits for another process's key lock.
@MainActor
enum SessionSynchronousAnswers {
    static func run(_ configuration: ChappieConfiguration, home: URL) async throws {
        let signer = await Chappie.openAuthSession(configuration: configuration)
        try await signer.startDeviceCodeSignIn()
        let info = signer.accountInfo
        let local = try await StoreOpener.open(configuration.store).local!
        func stored() throws -> Int {
            let database = try DatabaseQueue(path: home.appendingPathComponent("chappie.sqlite").path)
            defer { try? database.close() }
            return try database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM accounts WHERE name = 'work'") ?? -1 }
        }
        // A rotation in another process holds the key lock: the keyed open waits behind it.
        var lock: FileLock? = try await FileLock.acquire(local.keyLockURL, mode: .exclusive)

        let session = Chappie.authSession(configuration: configuration)
        #expect(session.isRestoring, "the keyed open waits for the lock")
        guard case .signedIn = session.state else {
            Issue.record("a signed-in user is \(session.state) until the store opens")
            return
        }
        #expect(session.accountInfo == info)

        session.signOut()
        #expect(try stored() == 0, "the account is gone when signOut() returns, though the store is not open yet")
        lock = nil  // the rotation ends
        #expect(lock == nil)
        await session.waitUntilRestored()
        await session.waitUntilSignedOut()
        #expect(session.state == .signedOut && session.lastError == nil)
        let log = try await local.events(limit: 5)
        #expect(log.first?.kind == AuditEventKind.removed.rawValue && log.first?.accountName == "work", "the removal is in the audit log: \(log)")

        // Another key: what the store holds is shown at once, then the keyed open fails and says so.
        try await signer.startDeviceCodeSignIn()
        let otherKey = home.appendingPathComponent("other.key")
        try Data((Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() + "\n").utf8).write(to: otherKey)
        chmod(otherKey.path, 0o600)
        var wrongKey = configuration
        wrongKey.store.keyFile = otherKey.path
        let failing = Chappie.authSession(configuration: wrongKey)
        if case .signedIn = failing.state {} else { Issue.record("\(failing.state)") }
        await failing.waitUntilRestored()
        guard case .failed = failing.state else {
            Issue.record("a store whose key does not open is \(failing.state)")
            return
        }
        // Signing out of a session whose store did not open deletes nothing: the key is the wrong one.
        failing.signOut()
        await failing.waitUntilSignedOut()
        #expect(try stored() == 1, "the account a wrong key cannot read is still there")
        #expect(failing.lastError != nil)

        // A data directory others can read: nothing is read without the key; the keyed open answers.
        #expect(chmod(home.path, 0o755) == 0)
        let loose = Chappie.authSession(configuration: configuration)
        #expect(loose.state == .signedOut && loose.isRestoring)
        await loose.waitUntilRestored()
        if case .signedIn = loose.state {} else { Issue.record("\(loose.state)") }
    }
}

@MainActor
enum SessionFailedStore {
    static func run(_ configuration: ChappieConfiguration) async throws {
        let session = Chappie.authSession(configuration: configuration)
        await session.waitUntilRestored()
        guard case .failed(let reason) = session.state else {
            Issue.record("state \(session.state)")
            return
        }
        #expect(reason.hasPrefix("The credential store cannot be used: "), "\(reason)")
        do {
            try await session.refreshAuth()
            Issue.record("a refresh without a store succeeded")
        } catch {
            guard case .unknown(let message) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(message.hasPrefix("The credential store cannot be used: "), "\(message)")
            #expect(session.lastError == error)
        }
        await #expect(throws: ChappieAuthError.self) { try await session.startDeviceCodeSignIn() }
    }
}

@MainActor
enum SessionOnPool {
    static func run(_ configuration: ChappieConfiguration) async throws {
        let session = await Chappie.openAuthSession(configuration: configuration)
        #expect(session.state == .signedOut)
        try await session.startDeviceCodeSignIn()
        guard case .signedIn = session.state else {
            Issue.record("state \(session.state)")
            return
        }
        let restored = await Chappie.openAuthSession(configuration: configuration)
        #expect(restored.accountInfo == session.accountInfo)
        try await restored.refreshAuth()
        #expect(restored.lastError == nil)
        restored.signOut()
        await restored.waitUntilSignedOut()
        #expect(await Chappie.openAuthSession(configuration: configuration).state == .signedOut)
    }
}

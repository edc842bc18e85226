import Chappie
import ChappieEmulator
import ChappieNet
import ChappieStore
import ChappieTestSupport
import ChappieVault
import Foundation
import GRDB
import Synchronization
import Testing

/// One signed-in account in a fresh store, beside an in-process emulator.
private struct Bench: Sendable {
    let emulator: RunningEmulator
    let home: URL
    let store: SQLiteAccountStore
    let oauth: OAuthClient
    let account: Account

    var options: StoreOptions { StoreOptions(home: home.path, environment: [:]) }
    var databaseFile: URL { home.appendingPathComponent(StoreDatabase.fileName) }

    static func run(_ body: (Bench) async throws -> Void) async throws {
        var configuration = EmulatorConfiguration()
        configuration.autoApprove = true
        configuration.autoApproveDelay = .zero
        configuration.deviceCodePollInterval = 1
        try await withEmulator(configuration) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-whole")
            defer { try? FileManager.default.removeItem(at: home) }
            let options = StoreOptions(home: home.path, environment: [:])
            let store = try await StoreOpener.open(options).local!
            let oauth = OAuthClient(
                endpoints: try ChappieEndpoints(issuer: emulator.baseURL.absoluteString, backend: emulator.backendURL.absoluteString),
                http: emulator.client)
            let result = try await DeviceCodeSignIn(oauth: oauth).run()
            let account = try await store.save(
                info: result.account, credentials: result.credentials, accessTokenExpiresAt: result.accessTokenExpiresAt,
                refreshedAt: Date(), name: nil, event: .signedIn
            ).account
            try await body(Bench(emulator: emulator, home: home, store: store, oauth: oauth, account: account))
        }
    }

    /// The same store opened with a short busy timeout, so that a held write lock fails a commit quickly.
    func impatientStore() throws -> SQLiteAccountStore {
        try StoreDatabase.open(at: options.location, busyTimeout: 0.1).unlock(with: try KeyFile.read(options.location.defaultKeyFile))
    }

    /// A refresher that gives up committing quickly (the tests make every commit fail).
    func refresher(_ store: SQLiteAccountStore) -> TokenRefresher {
        var refresher = TokenRefresher(store: store, oauth: oauth)
        refresher.commitAttempts = 3
        refresher.commitBackoff = .milliseconds(10)
        return refresher
    }

    func fault(_ json: String) async throws {
        _ = try await emulator.client.execute(emulator.request("/_emulator/faults", method: .post, json: json))
    }

    func stats() async throws -> JSONDocument {
        try await emulator.json(emulator.request("/_emulator/stats")).json
    }

    /// Waits until the emulator has received `count` token requests (so a refresh is in flight).
    func waitForTokenRequests(_ count: Int) async throws {
        for _ in 0..<600 {
            if (try await stats().int("requests", "/oauth/token") ?? 0) >= count { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the token request never reached the emulator")
    }

    /// No refresh token was presented twice at the emulator.
    func expectNoReuse(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let stats = try await stats()
        #expect(stats.int("refresh", "reuse_detected") == 0, sourceLocation: sourceLocation)
        #expect(stats.int("refresh", "tokens_presented_more_than_once") == 0, sourceLocation: sourceLocation)
    }

    /// After a failed commit: the recovery file exists, is private, holds no token in clear, and
    /// is what the store reads; returns the tokens it holds.
    func expectRecoveryFile(_ store: SQLiteAccountStore, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Credentials {
        let file = store.recoveryDirectory.appendingPathComponent("account-\(account.id).sealed")
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, sourceLocation: sourceLocation)
        let directory = try FileManager.default.attributesOfItem(atPath: store.recoveryDirectory.path)
        #expect((directory[.posixPermissions] as? NSNumber)?.intValue == 0o700, sourceLocation: sourceLocation)
        let pending = try await store.credentials(for: account)
        let bytes = try Data(contentsOf: file)
        #expect(bytes.range(of: Data(pending.refreshToken.utf8)) == nil, "the recovery file holds a token in clear", sourceLocation: sourceLocation)
        #expect(bytes.range(of: Data(pending.accessToken.utf8)) == nil, sourceLocation: sourceLocation)
        return pending
    }

    /// Opening the store again adopts the recovery file: the database holds its tokens, the file is
    /// gone, the audit log says so, and a refresh from there works.
    func expectAdoptedOnOpen(_ pending: Credentials, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let reopened = try await StoreOpener.open(options).local!
        let file = reopened.recoveryDirectory.appendingPathComponent("account-\(account.id).sealed")
        #expect(!FileManager.default.fileExists(atPath: file.path), sourceLocation: sourceLocation)
        #expect(try await reopened.credentials(for: account) == pending, sourceLocation: sourceLocation)
        #expect(try await reopened.events(limit: 5).contains { $0.kind == "recovered" }, sourceLocation: sourceLocation)
        let fresh = try await TokenRefresher(store: reopened, oauth: oauth).validCredentials(for: account, force: true)
        #expect(fresh.outcome == .refreshed, sourceLocation: sourceLocation)
        #expect(fresh.account.status == .ok, sourceLocation: sourceLocation)
        try await expectNoReuse(sourceLocation: sourceLocation)
    }
}

/// Another process's long write: a connection that holds the database's write lock on a thread of
/// its own until released.
private final class WriteLockHolder: Sendable {
    private let held = DispatchSemaphore(value: 0)
    private let releasing = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(_ file: URL) throws {
        let queue = try DatabaseQueue(path: file.path)
        let (held, releasing, finished) = (self.held, self.releasing, self.finished)
        Thread {
            try? queue.inDatabase { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                held.signal()
                releasing.wait()
                try db.execute(sql: "ROLLBACK")
            }
            finished.signal()
        }.start()
        held.wait()
    }

    func release() {
        releasing.signal()
        finished.wait()
    }
}

@Suite("Accounts stay whole: what signs an account out, tokens a commit could not store, a key rotated under a refresh")
struct AccountsStayWholeTests {
    @Test(
        "Only a dead grant signs an account out; a proxy's answer, a client fault or a 5xx leave it signed in",
        arguments: [
            (403, "<html><body><h1>403 Forbidden</h1>by the corporate proxy</body></html>", ChappieErrorRecovery.retry(.after(seconds: 5)), false),
            (401, "", .retry(.after(seconds: 5)), false),
            (403, #"{"error":{"message":"Forbidden"}}"#, .retry(.after(seconds: 5)), false),
            (400, #"{"error":"invalid_client","error_description":"Unknown client"}"#, .permanent(.fixConfiguration), false),
            (400, #"{"error":"invalid_request","error_description":"Missing parameter"}"#, .permanent(.inspectCause), false),
            (502, #"{"error":"invalid_grant"}"#, .retry(.after(seconds: 5)), false),
            (429, #"{"error":"invalid_grant"}"#, .retry(.after(seconds: 5)), false),
            (400, #"{"error":"invalid_grant","error_description":"Grant revoked"}"#, .signInAgain, true),
            (401, #"{"error":{"message":"expired","type":"invalid_request_error","code":"refresh_token_expired"}}"#, .signInAgain, true),
        ])
    func classification(_ status: Int, _ body: String, _ recovery: ChappieErrorRecovery, _ signsOut: Bool) async throws {
        try await Bench.run { bench in
            let before = try await bench.store.credentials(for: bench.account)
            let fault = try JSONSerialization.data(withJSONObject: ["kind": "status", "status": status, "path": "/oauth/token", "body": body])
            try await bench.fault(String(decoding: fault, as: UTF8.self))
            let refresher = TokenRefresher(store: bench.store, oauth: bench.oauth)
            do {
                _ = try await refresher.validCredentials(for: bench.account, force: true)
                Issue.record("the fault did not fail the refresh")
            } catch let error as ChappieAuthError {
                #expect(error.recovery == recovery)
                #expect(error.requiresReauthentication == signsOut)
            }
            var account = try await bench.store.account(id: bench.account.id)
            #expect(account.status == (signsOut ? .reauthRequired : .ok))
            #expect(try await bench.store.credentials(for: account) == before, "the stored tokens must be untouched")
            if signsOut {
                // Signed out: a plain call fails at once with what the issuer said, once, and asks nothing.
                let requests = try await bench.stats().int("requests", "/oauth/token")
                do {
                    _ = try await refresher.validCredentials(for: account, force: true)
                    Issue.record("a signed-out account refreshed without being asked to")
                } catch let error as ChappieAuthError {
                    #expect(error.requiresReauthentication)
                    #expect((error.errorDescription ?? "").components(separatedBy: "answered HTTP").count == 2, "\(error)")
                }
                #expect(try await bench.stats().int("requests", "/oauth/token") == requests)
                // Asked by name (`chappie refresh NAME`), it is tried once more; success puts it back to ok.
                let fresh = try await refresher.validCredentials(for: account, retrySignedOut: true)
                #expect(fresh.outcome == .refreshed)
                account = try await bench.store.account(id: bench.account.id)
                #expect(account.status == .ok)
            } else {
                let fresh = try await refresher.validCredentials(for: account, force: true)
                #expect(fresh.outcome == .refreshed)
            }
            try await bench.expectNoReuse()
        }
    }

    @Test(
        "A writer holding the database past the busy timeout: the redeemed tokens go to a recovery file, are used while it stays locked, and are adopted later"
    )
    func busyDatabase() async throws {
        try await Bench.run { bench in
            let store = try bench.impatientStore()
            let before = try await store.credentials(for: bench.account)
            let blocker = try WriteLockHolder(bench.databaseFile)
            await #expect {
                _ = try await bench.refresher(store).validCredentials(for: bench.account, force: true)
            } throws: { error in
                (error as? StoreError)?.message.contains("kept sealed in") == true
            }
            let first = try await bench.expectRecoveryFile(store)
            #expect(first.refreshToken != before.refreshToken)
            // Still locked: the next refresh redeems the recovered refresh token, not the spent one.
            await #expect(throws: StoreError.self) {
                _ = try await bench.refresher(store).validCredentials(for: bench.account, force: true)
            }
            let second = try await bench.expectRecoveryFile(store)
            #expect(second.refreshToken != first.refreshToken)
            // Adopting while it is still locked fails and loses nothing: the file stays and is still read.
            #expect(store.adoptRecoveredTokens().isEmpty)
            #expect(try await store.credentials(for: bench.account) == second)
            blocker.release()
            try await bench.expectAdoptedOnOpen(second)
        }
    }

    @Test("An I/O error on every commit (injected by a trigger): the tokens survive in a recovery file")
    func failingCommit() async throws {
        try await Bench.run { bench in
            let injector = try DatabaseQueue(path: bench.databaseFile.path)
            try await injector.write { db in
                try db.execute(
                    sql:
                        "CREATE TRIGGER injected_failure BEFORE UPDATE ON sealed_credentials BEGIN SELECT RAISE(ABORT, 'disk I/O error (injected)'); END"
                )
            }
            await #expect(throws: StoreError.self) {
                _ = try await bench.refresher(bench.store).validCredentials(for: bench.account, force: true)
            }
            let pending = try await bench.expectRecoveryFile(bench.store)
            // Opening while the failure persists keeps the file.
            _ = try await StoreOpener.open(bench.options)
            #expect(try await bench.expectRecoveryFile(bench.store) == pending)
            try await injector.write { db in try db.execute(sql: "DROP TRIGGER injected_failure") }
            try await bench.expectAdoptedOnOpen(pending)
        }
    }

    @Test("A key rotation started while a refresh is at the issuer waits for its commit; nothing is sealed with a lost key")
    func rotationWaitsForRefresh() async throws {
        try await Bench.run { bench in
            try await bench.fault(#"{"kind":"latency","ms":2000,"path":"/oauth/token"}"#)
            let refresher = TokenRefresher(store: bench.store, oauth: bench.oauth)
            let account = bench.account
            let refresh = Task { try await refresher.validCredentials(for: account, force: true) }
            try await bench.waitForTokenRequests(2)
            let options = bench.options
            let oldKeyID = bench.store.key.id
            // The rotation waits for the key lock (polling it, without blocking a thread).
            let rotation = Task { try await KeyRotation.rotate(try await StoreOpener.open(options), options: options).newKeyID }
            try await Task.sleep(for: .milliseconds(300))
            // While the refresh is still at the issuer the key must not change under it. (Checked only
            // if this look came before the refresh's commit: a stalled machine may have finished it.)
            let lookedAt = Date()
            let keyMeanwhile = try KeyFile.read(options.location.defaultKeyFile).id
            let fresh = try await refresh.value
            let newKeyID = try await rotation.value
            #expect(fresh.outcome == .refreshed)
            let reopened = try await StoreOpener.open(options).local!
            #expect(reopened.key.id == newKeyID)
            #expect(try await reopened.credentials(for: account) == fresh.credentials)
            let committedAt = try #require(try await reopened.events(limit: 10).first { $0.kind == "refreshed" }?.at)
            if lookedAt < committedAt { #expect(keyMeanwhile == oldKeyID, "the key changed while a refresh was at the issuer") }
            let kinds = try await reopened.events(limit: 10).map(\.kind)
            let rotated = try #require(kinds.firstIndex(of: "key_rotated"))
            let refreshed = try #require(kinds.firstIndex(of: "refreshed"))
            #expect(rotated < refreshed, "newest first: the rotation must come after the refresh's commit")
            #expect(!FileManager.default.fileExists(atPath: KeyRotation.pendingURL(for: options.location.defaultKeyFile).path))
            try await bench.expectNoReuse()
        }
    }

    @Test("A recovery file that does not open is kept and stops a rotation; one proven stale is removed, never adopted")
    func recoveryFileStates() async throws {
        try await Bench.run { bench in
            let store = bench.store
            let file = store.recoveryDirectory.appendingPathComponent("account-\(bench.account.id).sealed")
            let stored = try await store.credentials(for: bench.account)
            try FileManager.default.createDirectory(at: store.recoveryDirectory, withIntermediateDirectories: true)
            try Data("not a recovery file".utf8).write(to: file)
            _ = try await StoreOpener.open(bench.options)
            #expect(FileManager.default.fileExists(atPath: file.path), "a file that does not open must be kept")
            #expect(try await store.credentials(for: bench.account) == stored)
            await #expect(throws: StoreError.self) {
                _ = try await KeyRotation.rotate(try await StoreOpener.open(bench.options), options: bench.options)
            }
            #expect(try await StoreOpener.open(bench.options).local!.key.id == store.key.id, "the key must not have changed")
            try FileManager.default.removeItem(at: file)

            // A real recovery file, then the database moves on (another refresh committed): the copy is stale.
            let older = Credentials(idToken: stored.idToken, accessToken: stored.accessToken, refreshToken: "rt-older-copy")
            try await store.keepForRecovery(older, of: bench.account, accessTokenExpiresAt: nil, refreshedAt: Date())
            #expect(try await store.credentials(for: bench.account) == older, "a pending file is what reads use")
            let saved = try Data(contentsOf: file)
            // Another process commits tokens to the database (which removes the file); the old copy comes back.
            _ = try await store.updateCredentials(of: bench.account, to: stored, accessTokenExpiresAt: nil, refreshedAt: Date(), event: .refreshed)
            #expect(!FileManager.default.fileExists(atPath: file.path))
            try saved.write(to: file)
            #expect(try await store.credentials(for: bench.account) == stored, "a stale file must not be read")
            let reopened = try await StoreOpener.open(bench.options).local!
            #expect(!FileManager.default.fileExists(atPath: file.path), "a stale file is removed on open")
            #expect(try await reopened.credentials(for: bench.account) == stored)
        }
    }

    @Test("A store opened before another process rotated the key takes up the new key: it reads and refreshes, sealing with the new key")
    func staleStoreTakesUpNewKey() async throws {
        try await Bench.run { bench in
            let outcome = try await KeyRotation.rotate(try await StoreOpener.open(bench.options), options: bench.options)
            #expect(bench.store.key.id == outcome.oldKeyID)
            #expect(try await bench.store.credentials(for: bench.account).refreshToken.isEmpty == false)
            #expect(bench.store.key.id == outcome.newKeyID)
            let fresh = try await TokenRefresher(store: bench.store, oauth: bench.oauth).validCredentials(for: bench.account, force: true)
            #expect(try await StoreOpener.open(bench.options).local!.credentials(for: bench.account) == fresh.credentials)
            #expect(try await StoreOpener.open(bench.options).local!.credentialCountsByKey() == [outcome.newKeyID: 1])
        }
    }
}

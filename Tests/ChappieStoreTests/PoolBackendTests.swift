import ChappiePool
import ChappieCore
import ChappieStore
import ChappieTestSupport
import Foundation
import Testing

@Suite("A team pool is opened only through its backend (ChappiePool), which a program links when it wants one")
struct PoolBackendTests {
    @Test("Without the backend, a pool's address is refused saying what to link; with the pool's backend the same options open the pool")
    func backendIsNeeded() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-backend")
        defer { try? FileManager.default.removeItem(at: home) }
        let (_, url) = try await SharedPostgres.database()
        var options = StoreOptions(home: home.path, environment: [:], storeURL: url)
        await #expect {
            _ = try await StoreOpener.open(options)
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .poolAddress && error.message.contains("ChappiePool") && error.message.contains("TeamPool()")
        }
        // Nothing was created for the pool: no key file was written on the refusal.
        #expect(!FileManager.default.fileExists(atPath: options.location.defaultKeyFile.path))
        options.poolBackend = TeamPool(deadline: .seconds(300))
        let opened = try await StoreOpener.open(options)
        #expect(opened.local == nil)
        #expect(try await opened.store.accounts().isEmpty)
        #expect(opened.store.keyChangesElsewhere)
    }
}

@Suite("The team pool's deadline is kept by the server: a slow statement is cancelled and rolled back")
struct PoolStatementTimeoutTests {
    @Test("A write that waits on a locked table is cancelled by the server (SQLSTATE 57014), says try again later, and changed nothing")
    func slowWriteIsCancelledWhole() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-timeout")
        defer { try? FileManager.default.removeItem(at: home) }
        let (server, url) = try await SharedPostgres.database()
        var options = StoreOptions(home: home.path, environment: [:], storeURL: url)
        options.poolBackend = TeamPool(deadline: .seconds(300))
        let roomy = try await StoreOpener.open(options).store
        try await roomy.add(Identity("slow@example.com", marker: "s"), name: "slow")
        // The same pool whose statements may run 2 s on the server (and the client waits far longer:
        // whatever ends the write is the server's timeout).
        options.poolBackend = TeamPool(deadline: .seconds(300), statementTimeout: .seconds(2))
        let store = try await StoreOpener.open(options).store
        let holder = try await server.lock("accounts", in: url)
        var failure: StoreError?
        do {
            try await store.rename(named("slow"), to: named("renamed"))
        } catch {
            failure = error
        }
        try await server.release(holder, in: url)
        let error = try #require(failure)
        #expect(error.code == .unavailable)
        #expect(error.message.contains("57014"), "the server, not the client, ended the write: \(error.message)")
        #expect(error.message.contains("try again later"))
        #expect(try await roomy.accounts().map(\.name.rawValue) == ["slow"])
    }
}

import ChappiePool
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

import ChappieCore
import ChappieStore
import ChappieVault
import Foundation
import Testing

@Suite("Contract: key custody (KeyCustody), on every backend")
struct KeyCustodyContractTests {
    @Test("Every open holds the store's one key, current, and a held key lets the body run and returns its value", arguments: StoreBackend.allCases)
    func keyIsTheStores(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let again = try await contract.open()
            #expect(store.key.id == again.key.id)
            #expect(try await store.keyIsCurrent())
            let account = try await store.add(Identity("k@example.com", marker: "k"))
            let sealed = try await store.withKeyHeld {
                try await store.updateCredentials(
                    of: account, to: Identity("k@example.com", marker: "k2").credentials, accessTokenExpiresAt: nil, refreshedAt: Date(),
                    event: .refreshed)
            }
            #expect(try await again.credentials(for: sealed).refreshToken == "refresh-k2")
        }
    }

    @Test("Only a shared pool's key can change where this process cannot follow", arguments: StoreBackend.allCases)
    func keyChangesElsewhere(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            #expect(store.keyChangesElsewhere == backend.sharedByMachines)
        }
    }
}

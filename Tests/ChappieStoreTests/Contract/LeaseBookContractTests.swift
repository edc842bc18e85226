import ChappieCore
import ChappieStore
import Foundation
import Testing

@Suite("Contract: leases and poll claims (LeaseBook), on every backend")
struct LeaseBookContractTests {
    @Test(
        "A lease takes a free slot of the first candidate with one; a full account is passed over; none free is nil", arguments: StoreBackend.allCases
    )
    func slots(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"), name: "a")
            let b = try await store.add(Identity("b@example.com", marker: "b"), name: "b")
            let candidates = [Lease.Candidate(accountID: a.id, wholeAccount: false), Lease.Candidate(accountID: b.id, wholeAccount: false)]
            let first = try #require(try await store.acquireLease(on: candidates, holder: "job-1", ttl: .seconds(60)))
            #expect(first.accountID == a.id)
            #expect(first.accountName == named("a"))
            #expect(first.holder == "job-1")
            #expect(!first.wholeAccount)
            #expect(first.expiresAt > first.acquiredAt)
            let second = try #require(try await store.acquireLease(on: candidates, holder: "job-2", ttl: .seconds(60)))
            #expect(second.accountID == b.id)
            #expect(try await store.acquireLease(on: candidates, holder: "job-3", ttl: .seconds(60)) == nil)
            // More slots, more leases.
            _ = try await store.setMaxLeases(2, for: named("a"))
            #expect(try await store.acquireLease(on: candidates, holder: "job-3", ttl: .seconds(60))?.accountID == a.id)
            let listed = try await store.leases()
            #expect(listed.map(\.holder) == ["job-1", "job-3", "job-2"])
            #expect(Set(listed.map(\.id)).count == 3)
        }
    }

    @Test("A whole-account lease needs every slot free and takes them all", arguments: StoreBackend.allCases)
    func wholeAccount(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"), name: "a")
            _ = try await store.setMaxLeases(3, for: named("a"))
            let slot = [Lease.Candidate(accountID: a.id, wholeAccount: false)]
            let whole = [Lease.Candidate(accountID: a.id, wholeAccount: true)]
            let one = try #require(try await store.acquireLease(on: slot, holder: "slot", ttl: .seconds(60)))
            #expect(try await store.acquireLease(on: whole, holder: "whole", ttl: .seconds(60)) == nil)
            try await store.releaseLease(one.id)
            let all = try #require(try await store.acquireLease(on: whole, holder: "whole", ttl: .seconds(60)))
            #expect(all.wholeAccount)
            #expect(try await store.acquireLease(on: slot, holder: "slot", ttl: .seconds(60)) == nil)
        }
    }

    @Test("Renewing extends a live lease; a released one is gone, and releasing twice is harmless", arguments: StoreBackend.allCases)
    func renewAndRelease(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"), name: "a")
            let lease = try #require(
                try await store.acquireLease(on: [.init(accountID: a.id, wholeAccount: false)], holder: "job", ttl: .seconds(60)))
            let renewed = try await store.renewLease(lease.id, ttl: .seconds(3600))
            #expect(renewed.id == lease.id)
            #expect(renewed.expiresAt > lease.expiresAt)
            try await store.releaseLease(lease.id)
            #expect(try await store.leases().isEmpty)
            await expectStoreError(.notFound) { try await store.renewLease(lease.id, ttl: .seconds(60)) }
            try await store.releaseLease(lease.id)
            try await store.releaseLease(UUID())
        }
    }

    @Test("An expired lease is not listed, cannot be renewed, and its slot is taken over", arguments: StoreBackend.allCases)
    func expiry(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"), name: "a")
            let candidates = [Lease.Candidate(accountID: a.id, wholeAccount: false)]
            let short = try #require(try await store.acquireLease(on: candidates, holder: "short", ttl: .milliseconds(1)))
            // Expiry is the store's clock against the lease's time: wait until it has passed.
            while Date() <= short.expiresAt.addingTimeInterval(0.05) { try await Task.sleep(for: .milliseconds(20)) }
            #expect(try await store.leases().isEmpty)
            await expectStoreError(.notFound) { try await store.renewLease(short.id, ttl: .seconds(60)) }
            let next = try #require(try await store.acquireLease(on: candidates, holder: "next", ttl: .seconds(60)))
            #expect(next.accountID == a.id)
            #expect(try await store.events(limit: 10).contains { $0.kind == AuditEventKind.leaseExpired.rawValue && $0.detail.contains("short") })
        }
    }

    @Test("An account that needs a sign-in is passed over", arguments: StoreBackend.allCases)
    func signedOutIsPassedOver(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"), name: "a")
            let b = try await store.add(Identity("b@example.com", marker: "b"), name: "b")
            try await store.recordFailure(of: a, message: "revoked", status: .reauthRequired, event: .refreshFailed)
            let lease = try await store.acquireLease(
                on: [.init(accountID: a.id, wholeAccount: false), .init(accountID: b.id, wholeAccount: false)], holder: "job", ttl: .seconds(60))
            #expect(lease?.accountID == b.id)
        }
    }

    @Test("Removing an account ends its leases", arguments: StoreBackend.allCases)
    func removalEndsLeases(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"), name: "a")
            _ = try #require(try await store.acquireLease(on: [.init(accountID: a.id, wholeAccount: false)], holder: "job", ttl: .seconds(60)))
            try await store.remove(named("a"))
            #expect(try await store.leases().isEmpty)
        }
    }

    @Test(
        "Polls claimed by one machine are left out for the others of a shared store until the period ends; one machine's store gives all",
        arguments: StoreBackend.allCases)
    func claimsAreShared(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let first = try await contract.open()
            let a = try await first.add(Identity("a@example.com", marker: "a"))
            let b = try await first.add(Identity("b@example.com", marker: "b"))
            #expect(try await first.claimPolls(of: [a.id], for: .seconds(600)) == [a.id])
            let second = try await contract.open(machine: "contract-b")
            let claimed = try await second.claimPolls(of: [a.id, b.id], for: .seconds(600))
            #expect(claimed == (backend.sharedByMachines ? [b.id] : [a.id, b.id]))
        }
    }

    @Test("A first claim of polls gets every account asked for", arguments: StoreBackend.allCases)
    func claimPolls(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"))
            let b = try await store.add(Identity("b@example.com", marker: "b"))
            #expect(try await store.claimPolls(of: [a.id, b.id], for: .seconds(60)) == [a.id, b.id])
            #expect(try await store.claimPolls(of: [], for: .seconds(60)).isEmpty)
        }
    }
}

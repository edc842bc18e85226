import ChappieCore
import ChappieStore
import ChappieVault
import Foundation
import ChappieTestSupport
import Testing

@Suite("Contract: sealed credentials and the refresh lock (SealedCredentials), on every backend")
struct SealedCredentialsContractTests {
    @Test("Tokens come back as stored, from this open and another; updates replace them and clear a failure", arguments: StoreBackend.allCases)
    func roundTrip(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let identity = Identity("t@example.com", marker: "t1")
            let account = try await store.add(identity)
            #expect(try await store.credentials(for: account) == identity.credentials)
            #expect(try await contract.open().credentials(for: account) == identity.credentials)

            try await store.recordFailure(of: account, message: "the refresh token was revoked", status: .reauthRequired, event: .refreshFailed)
            let failed = try await store.account(id: account.id)
            #expect(failed.status == .reauthRequired)
            #expect(failed.lastError == "the refresh token was revoked")

            let expires = Date(timeIntervalSince1970: 2_000_000_000)
            let updated = try await store.updateCredentials(
                of: failed, to: identity.rotated("t2"), accessTokenExpiresAt: expires, refreshedAt: Date(), event: .refreshed)
            #expect(updated.status == .ok)
            #expect(updated.lastError == nil)
            #expect(updated.accessTokenExpiresAt == expires)
            #expect(try await store.credentials(for: updated) == identity.rotated("t2"))
        }
    }

    @Test(
        "Verified tokens' plan and e-mail update the account, with an audit entry; another account's, or hostile text, change nothing",
        arguments: StoreBackend.allCases)
    func identityFollowsTheTokens(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let identity = Identity("p@example.com", marker: "p1")
            let other = try await store.add(Identity("q@example.com", marker: "q1"))
            let account = try await store.add(identity)
            #expect(account.info.plan == .plus)
            func info(_ email: String?, plan: String?, accountID: String? = identity.info.accountID) -> ChappieAccountInfo {
                ChappieAccountInfo(email: email, userID: identity.info.userID, accountID: accountID, plan: plan.map(ChappiePlan.init(rawValue:)))
            }
            let updated = try await store.updateIdentity(of: account, to: info("p.new@example.com", plan: "pro"))
            #expect(updated.info.plan == .pro)
            #expect(updated.info.email == "p.new@example.com")
            let reopened = try await contract.open().account(id: account.id)
            #expect(reopened.info.plan == .pro)
            #expect(reopened.info.email == "p.new@example.com")
            #expect(try await store.account(id: other.id).info.email == "q@example.com")
            let changes = try await store.events().filter { $0.kind == AuditEventKind.identityChanged.rawValue }
            // The pool's entries name the machine too.
            #expect(changes.count == 1)
            #expect(changes.first?.detail.hasPrefix("plan plus → pro, e-mail p@example.com → p.new@example.com") == true)

            // The same again: no change, no entry. Another account's claims, or text no plan or
            // e-mail has (control characters, a megabyte), change nothing.
            _ = try await store.updateIdentity(of: updated, to: info("p.new@example.com", plan: "pro"))
            _ = try await store.updateIdentity(of: updated, to: info("x@example.com", plan: "team", accountID: "another"))
            _ = try await store.updateIdentity(of: updated, to: info("evil\u{1B}[2J@example.com", plan: "pro\u{202E}x"))
            _ = try await store.updateIdentity(
                of: updated, to: info(String(repeating: "a", count: 1_000_000), plan: String(repeating: "b", count: 100)))
            let kept = try await store.account(id: account.id)
            #expect(kept.info.plan == .pro)
            #expect(kept.info.email == "p.new@example.com")
            #expect(try await store.events().filter { $0.kind == AuditEventKind.identityChanged.rawValue }.count == 1)
        }
    }

    @Test("A failure without a status keeps the account's status", arguments: StoreBackend.allCases)
    func failureKeepsStatus(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let account = try await store.add(Identity("f@example.com", marker: "f"))
            try await store.recordFailure(of: account, message: "the service did not answer", event: .refreshFailed)
            let read = try await store.account(id: account.id)
            #expect(read.status == .ok)
            #expect(read.lastError == "the service did not answer")
        }
    }

    @Test("Every credential opens and is counted under the store's key", arguments: StoreBackend.allCases)
    func keyCounts(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let accounts = [
                try await store.add(Identity("k1@example.com", marker: "k1")), try await store.add(Identity("k2@example.com", marker: "k2")),
            ]
            #expect(try await store.credentialProblems(of: accounts).isEmpty)
            #expect(try await store.credentialCountsByKey() == [store.key.id: 2])
        }
    }

    @Test("Tokens kept for recovery are what a later read returns, from any open of the store", arguments: StoreBackend.allCases)
    func recovery(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let identity = Identity("rec@example.com", marker: "r1")
            let account = try await store.add(identity)
            try await store.withRefreshLock(on: account) {
                try await store.reserveRecovery(for: account)
                let file = try await store.keepForRecovery(identity.rotated("r2"), of: account, accessTokenExpiresAt: nil, refreshedAt: Date())
                #expect(FileManager.default.fileExists(atPath: file.path))
                #expect(try privateMode(file))
            }
            #expect(try await store.credentials(for: account) == identity.rotated("r2"))
            let reopened = try await contract.open()
            #expect(try await reopened.credentials(for: account) == identity.rotated("r2"))
        }
    }

    @Test("Quarantined tokens are kept in a private file and never used", arguments: StoreBackend.allCases)
    func quarantine(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let identity = Identity("q@example.com", marker: "q1")
            let account = try await store.add(identity)
            let file = try await store.quarantine(identity.rotated("q2"), of: account)
            #expect(file.path.hasPrefix(contract.home.path))
            #expect(file.deletingLastPathComponent().lastPathComponent == "quarantine")
            #expect(try privateMode(file))
            #expect(try await store.credentials(for: account) == identity.credentials)
        }
    }

    @Test("One account's refresh lock admits one holder at a time, across two opens of the store", arguments: StoreBackend.allCases)
    func refreshLockExcludes(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let first = try await contract.open()
            let second = try await contract.open()
            let account = try await first.add(Identity("lock@example.com", marker: "l"))
            let log = Log()
            let (entered, enteredNow) = AsyncStream.makeStream(of: Void.self)
            let (release, releaseNow) = AsyncStream.makeStream(of: Void.self)
            let holder = Task {
                try await first.withRefreshLock(on: account) {
                    log.append("first in")
                    enteredNow.yield()
                    for await _ in release { break }
                    log.append("first out")
                }
            }
            for await _ in entered { break }
            let waiter = Task {
                try await second.withRefreshLock(on: account) { log.append("second in") }
            }
            // The waiter has time to take the lock if it were free: it must not.
            try await Task.sleep(for: .milliseconds(300))
            #expect(log.entries == ["first in"])
            releaseNow.yield()
            try await holder.value
            try await waiter.value
            #expect(log.entries == ["first in", "first out", "second in"])
        }
    }

    @Test("Different accounts' refresh locks do not wait for each other; several are taken together", arguments: StoreBackend.allCases)
    func refreshLocksAreIndependent(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let first = try await contract.open()
            let second = try await contract.open()
            let a = try await first.add(Identity("a@example.com", marker: "a"))
            let b = try await first.add(Identity("b@example.com", marker: "b"))
            let value = try await first.withRefreshLock(on: a) {
                try await second.withRefreshLock(on: b) { 42 }
            }
            #expect(value == 42)
            #expect(try await second.withRefreshLock(onAccounts: [b.id, a.id, a.id]) { "both" } == "both")
        }
    }

    @Test("A lock is given back when its body throws", arguments: StoreBackend.allCases)
    func refreshLockReleasedOnThrow(_ backend: StoreBackend) async throws {
        struct Thrown: Error {}
        try await backend.withStore { contract in
            let first = try await contract.open()
            let second = try await contract.open()
            let account = try await first.add(Identity("t@example.com", marker: "t"))
            await #expect(throws: Thrown.self) { try await first.withRefreshLock(on: account) { throw Thrown() } }
            #expect(try await second.withRefreshLock(on: account) { true })
        }
    }
}

/// Whether a file is readable and writable by its owner only.
func privateMode(_ file: URL) throws -> Bool {
    let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
    return mode == 0o600
}

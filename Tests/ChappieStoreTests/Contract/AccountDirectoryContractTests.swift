import ChappieCore
import ChappieStore
import Foundation
import Testing

@Suite("Contract: the directory of accounts (AccountDirectory), on every backend")
struct AccountDirectoryContractTests {
    @Test("An empty store has no accounts, no active one, and says which name or id is missing", arguments: StoreBackend.allCases)
    func empty(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            #expect(try await store.accounts().isEmpty)
            #expect(try await store.activeAccount() == nil)
            await expectStoreError(.notFound) { try await store.account(named: named("nobody")) }
            await expectStoreError(.notFound) { try await store.account(id: 999) }
            #expect(try await store.account(matching: Identity("a@example.com", marker: "x").info) == nil)
            #expect(try await store.codexHomeOwner("/nowhere") == nil)
        }
    }

    @Test(
        "Saving creates an account named after its e-mail, unique, listed by name; saving the same identity updates it",
        arguments: StoreBackend.allCases)
    func saveCreatesThenUpdates(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let zed = Identity("zed@example.com", marker: "z1")
            let first = Identity("ann@example.com", marker: "a1")
            let second = Identity("ann@example.org", marker: "a2")
            let created = try await store.save(
                info: zed.info, credentials: zed.credentials, accessTokenExpiresAt: nil, refreshedAt: nil, name: nil, event: .signedIn)
            #expect(created.created)
            #expect(created.account.name.rawValue == "zed")
            try await store.add(first)
            try await store.add(second)
            let names = try await store.accounts().map(\.name.rawValue)
            #expect(names == names.sorted())
            #expect(Set(names).count == 3)
            #expect(names.contains("ann"))
            // The same ChatGPT account and user: the same row, not a new one.
            let again = try await store.save(
                info: zed.info, credentials: zed.rotated("z2"), accessTokenExpiresAt: nil, refreshedAt: nil, name: nil, event: .refreshed)
            #expect(!again.created)
            #expect(again.account.id == created.account.id)
            #expect(again.account.uuid == created.account.uuid)
            #expect(try await store.accounts().count == 3)
            #expect(try await store.credentials(for: again.account).refreshToken == "refresh-z2")
        }
    }

    @Test("A name another identity holds is refused at sign-in; a new identity may take a free one", arguments: StoreBackend.allCases)
    func saveUnderAName(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let work = try await store.add(Identity("w@example.com", marker: "w"), name: "work")
            #expect(work.name.rawValue == "work")
            await expectStoreError(.nameTaken) { try await store.add(Identity("x@example.com", marker: "x"), name: "work") }
            #expect(try await store.accounts().count == 1)
        }
    }

    @Test(
        "Accounts are found by name, by id, and by identity (both ids, or for an account without ids, the e-mail)", arguments: StoreBackend.allCases)
    func lookups(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let identity = Identity("find@example.com", marker: "f")
            let account = try await store.add(identity, name: "find")
            #expect(try await store.account(named: named("find")).id == account.id)
            #expect(try await store.account(id: account.id).name == account.name)
            #expect(try await store.account(matching: identity.info)?.id == account.id)
            let other = ChappieAccountInfo(email: "find@example.com", userID: "another-user", accountID: "another-account", plan: .plus)
            #expect(try await store.account(matching: other) == nil)
            // An e-mail alone matches only an account stored without ids.
            let emailOnly = ChappieAccountInfo(email: "find@example.com", userID: nil, accountID: nil, plan: nil)
            #expect(try await store.account(matching: emailOnly) == nil)
            let bare = try await store.save(
                info: emailOnly, credentials: identity.credentials, accessTokenExpiresAt: nil, refreshedAt: nil, name: named("bare"), event: .imported
            )
            #expect(bare.created)
            #expect(try await store.account(matching: emailOnly)?.id == bare.account.id)
            #expect(try await store.accounts(named: [named("find")]).map(\.id) == [account.id])
            await expectStoreError(.notFound) { try await store.accounts(named: [named("find"), named("gone")]) }
        }
    }

    @Test("Renaming keeps the account and its tokens; a taken or missing name is refused", arguments: StoreBackend.allCases)
    func rename(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let one = try await store.add(Identity("one@example.com", marker: "r1"), name: "one")
            try await store.add(Identity("two@example.com", marker: "r2"), name: "two")
            try await store.rename(named("one"), to: named("first"))
            let renamed = try await store.account(named: named("first"))
            #expect(renamed.id == one.id)
            #expect(try await store.credentials(for: renamed).refreshToken == "refresh-r1")
            await expectStoreError(.notFound) { try await store.account(named: named("one")) }
            await expectStoreError(.nameTaken) { try await store.rename(named("first"), to: named("two")) }
            await expectStoreError(.notFound) { try await store.rename(named("nobody"), to: named("somebody")) }
            try await store.rename(named("two"), to: named("two"))
            #expect(try await store.accounts().map(\.name.rawValue) == ["first", "two"])
        }
    }

    @Test("Removing an account takes its tokens and its place as active; removing it twice says it is gone", arguments: StoreBackend.allCases)
    func remove(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let gone = try await store.add(Identity("gone@example.com", marker: "g"), name: "gone")
            try await store.add(Identity("kept@example.com", marker: "k"), name: "kept")
            _ = try await store.activate(named("gone"))
            try await store.remove(named("gone"))
            #expect(try await store.accounts().map(\.name.rawValue) == ["kept"])
            #expect(try await store.activeAccount() == nil)
            // Its tokens are gone with it: the account must be signed in anew.
            await expectStoreError(.credentialUnreadable) { try await store.credentials(for: gone) }
            await expectStoreError(.notFound) { try await store.remove(named("gone")) }
        }
    }

    @Test(
        "Activating makes one account active and, with a Codex home, its one owner; the home moves with the next activation",
        arguments: StoreBackend.allCases)
    func activateOwnsTheHome(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            try await store.add(Identity("a@example.com", marker: "a"), name: "a")
            try await store.add(Identity("b@example.com", marker: "b"), name: "b")
            let a = try await store.activate(named("a"), owningCodexHome: "/homes/codex", detail: "test")
            #expect(a.isActive)
            #expect(a.codexHome == "/homes/codex")
            #expect(try await store.activeAccount()?.name == named("a"))
            #expect(try await store.codexHomeOwner("/homes/codex")?.name == named("a"))
            _ = try await store.activate(named("b"), owningCodexHome: "/homes/codex", detail: "test")
            #expect(try await store.codexHomeOwner("/homes/codex")?.name == named("b"))
            #expect(try await store.account(named: named("a")).codexHome == nil)
            #expect(try await store.account(named: named("a")).isActive == false)
            // Without a home, the active account changes and the owner stays.
            _ = try await store.activate(named("a"))
            #expect(try await store.activeAccount()?.name == named("a"))
            #expect(try await store.codexHomeOwner("/homes/codex")?.name == named("b"))
            await expectStoreError(.notFound) { try await store.activate(named("nobody")) }
        }
    }

    @Test(
        "Claiming a Codex home gives it to an account that has none, keeps an account's own home, and does not activate",
        arguments: StoreBackend.allCases)
    func claimCodexHome(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let a = try await store.add(Identity("a@example.com", marker: "a"), name: "a")
            let b = try await store.add(Identity("b@example.com", marker: "b"), name: "b")
            let claimed = try await store.claimCodexHome("/homes/one", for: a)
            #expect(claimed.codexHome == "/homes/one")
            #expect(!claimed.isActive)
            // An account that owns a home keeps it.
            #expect(try await store.claimCodexHome("/homes/two", for: claimed).codexHome == "/homes/one")
            // Another account claiming the same home takes it over.
            #expect(try await store.claimCodexHome("/homes/one", for: b).codexHome == "/homes/one")
            #expect(try await store.account(id: a.id).codexHome == nil)
            #expect(try await store.activeAccount() == nil)
            try await store.remove(named("b"))
            await expectStoreError(.notFound) { try await store.claimCodexHome("/homes/three", for: b) }
        }
    }

    @Test("Reserve and lease slots round-trip per account; a missing account is named", arguments: StoreBackend.allCases)
    func limits(_ backend: StoreBackend) async throws {
        try await backend.withStore { contract in
            let store = try await contract.open()
            let fresh = try await store.add(Identity("l@example.com", marker: "l"), name: "limits")
            #expect(fresh.reservePercent == nil)
            #expect(fresh.maxLeases == 1)
            #expect(try await store.setReserve(80, for: named("limits")).reservePercent == 80)
            #expect(try await store.setMaxLeases(3, for: named("limits")).maxLeases == 3)
            let reopened = try await contract.open()
            let read = try await reopened.account(named: named("limits"))
            #expect(read.reservePercent == 80)
            #expect(read.maxLeases == 3)
            #expect(try await store.setReserve(nil, for: named("limits")).reservePercent == nil)
            await expectStoreError(.notFound) { try await store.setReserve(50, for: named("nobody")) }
            await expectStoreError(.notFound) { try await store.setMaxLeases(2, for: named("nobody")) }
        }
    }
}

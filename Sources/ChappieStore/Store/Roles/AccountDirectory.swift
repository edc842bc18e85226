package import ChappieCore
package import Foundation

/// The accounts as a reader sees them: who they are, which is active, who owns a Codex home.
/// Reading never changes the store, so the read path (`token`, `accounts list`) needs only this
/// role; ``AccountDirectory`` adds the changes, as GRDB's `DatabaseWriter` refines its reader.
package protocol AccountDirectoryReader: Sendable {
    /// Every account, by name.
    func accounts() async throws(StoreError) -> [Account]
    /// The account with this name. Throws `.notFound`, naming the accounts there are.
    func account(named name: AccountName) async throws(StoreError) -> Account
    /// The account with this store id, as it is now (another process may have changed it).
    func account(id: Int64) async throws(StoreError) -> Account
    /// The active account, if one is set.
    func activeAccount() async throws(StoreError) -> Account?
    /// The stored account that is the same ChatGPT account and user as `info` (or, lacking those
    /// ids, has the same e-mail), if any.
    func account(matching info: ChappieAccountInfo) async throws(StoreError) -> Account?
    /// The account that owns a Codex home (its `auth.json` is kept with that account's tokens).
    func codexHomeOwner(_ codexHome: String) async throws(StoreError) -> Account?
}

/// The accounts and every change to who they are: sign-in's save, rename, removal, the active
/// account, Codex-home ownership and the per-account limits. Every change is one transaction with
/// its audit entry.
package protocol AccountDirectory: AccountDirectoryReader {
    /// Stores an account's tokens: updates the account with the same ChatGPT account and user (or,
    /// lacking those ids, the same e-mail), else creates one named `name` (by default after the
    /// e-mail, made unique). Returns the account and whether it was created.
    func save(
        info: ChappieAccountInfo, credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date?, name: AccountName?,
        event: AuditEventKind
    ) async throws(StoreError) -> (account: Account, created: Bool)
    /// Renames an account. Throws `.notFound` or `.nameTaken`.
    func rename(_ name: AccountName, to newName: AccountName) async throws(StoreError)
    /// Removes an account, its credentials and its usage history; the audit log keeps its name,
    /// `note` and its login (``RemovedLogin``).
    func remove(_ name: AccountName, note: String) async throws(StoreError)
    /// Makes an account the active one and, with `codexHome`, the one owner of that Codex home, in
    /// one transaction.
    func activate(_ name: AccountName, owningCodexHome codexHome: String?, detail: String) async throws(StoreError) -> Account
    /// Makes an account that owns no Codex home the owner of `codexHome` (whoever owned it no
    /// longer does), without making it active. An account that already owns a home keeps it: the
    /// account is returned as it is, and the caller uses the home it names.
    func claimCodexHome(_ codexHome: String, for account: Account) async throws(StoreError) -> Account
    /// Sets (or with `nil` clears) an account's reserve: at or above it, the account counts as full.
    func setReserve(_ percent: Double?, for name: AccountName) async throws(StoreError) -> Account

    /// Sets how many leases may hold an account at once (1 or more).
    func setMaxLeases(_ count: Int, for name: AccountName) async throws(StoreError) -> Account
    /// Sets whether chappie may choose the account by itself, and its priority among those it may
    /// (`nil`: unchanged); an audit entry says what changed.
    func setChoice(autoSwitch: Bool?, priority: Int?, for name: AccountName) async throws(StoreError) -> Account
    /// Takes the e-mail and plan that verified tokens of the account name (a plan upgrade reaches
    /// chappie only this way), with an `identity_changed` audit entry when either changed; see
    /// ``AccountRecord/takeIdentity(_:)`` for what is refused.
    func updateIdentity(of account: Account, to info: ChappieAccountInfo) async throws(StoreError) -> Account
}

extension AccountDirectoryReader {
    /// The accounts with these names, in that order (all of them, by name, when `names` is empty).
    /// Throws `.notFound` for the first name that is not stored.
    public func accounts(named names: [AccountName]) async throws(StoreError) -> [Account] {
        guard !names.isEmpty else { return try await accounts() }
        var found: [Account] = []
        for name in names { found.append(try await account(named: name)) }
        return found
    }
}

extension AccountDirectory {
    /// Makes a newly stored account the active one when none is: a new user's first account is
    /// ready for `token` and `ask` without a switch. No Codex home is written.
    package func activateIfNoneIs(_ account: Account) async throws(StoreError) -> Account {
        guard try await activeAccount() == nil else { return account }
        return try await activate(account.name, owningCodexHome: nil, detail: "the first account stored")
    }

    /// Makes an account the active one.
    public func activate(_ name: AccountName) async throws(StoreError) -> Account {
        try await activate(name, owningCodexHome: nil, detail: "")
    }

    /// Removes an account with nothing more to say of it than its login.
    package func remove(_ name: AccountName) async throws(StoreError) {
        try await remove(name, note: "")
    }
}

package import ChappieCore
package import ChappieVault
package import Foundation

/// The store of accounts: who they are, their sealed credentials, their usage history, the audit
/// log and the settings, and the serialisation of refreshes. Every operation is asynchronous, so a
/// backend never blocks the cooperative pool; ``SQLiteAccountStore`` (one machine) implements it.
///
/// Credentials are sealed with the store's key and bound to the account's ``Account/uuid`` and the
/// key id: a blob moved to another account, or sealed by another key, does not open. Every change
/// is one transaction, and its audit entry is written in the same transaction.
///
/// ```swift
/// let store: any AccountStore = try await StoreOpener.open(options).store
/// for account in try await store.accounts() { print(account.name) }
/// ```
package protocol AccountStore: Sendable {
    /// The local data directory (locks, recovery files, the default key file).
    var location: StoreLocation { get }
    /// The key credentials are sealed with (after a rotation by another process, the new key once
    /// it has been read again).
    var key: SecretKey { get }

    // MARK: Accounts

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
    /// Stores an account's tokens: updates the account with the same ChatGPT account and user (or,
    /// lacking those ids, the same e-mail), else creates one named `name` (by default after the
    /// e-mail, made unique). Returns the account and whether it was created.
    func save(
        info: ChappieAccountInfo, credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date?, name: AccountName?,
        event: AuditEventKind
    ) async throws(StoreError) -> (account: Account, created: Bool)
    /// Renames an account. Throws `.notFound` or `.nameTaken`.
    func rename(_ name: AccountName, to newName: AccountName) async throws(StoreError)
    /// Removes an account, its credentials and its usage history; the audit log keeps its name.
    func remove(_ name: AccountName) async throws(StoreError)
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

    // MARK: Credentials

    /// Opens an account's sealed credentials (tokens kept in a recovery file, when newer). Throws
    /// `.credentialUnreadable` when they do not open; other accounts are not affected.
    func credentials(for account: Account) async throws(StoreError) -> Credentials
    /// Which of these accounts' sealed credentials do not open, and why (authenticated, not decoded).
    func credentialProblems(of accounts: [Account]) async throws(StoreError) -> [Int64: String]
    /// Stores refreshed (or adopted) tokens of an existing account: status back to ok, error cleared.
    func updateCredentials(
        of account: Account, to credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date, event: AuditEventKind,
        detail: String
    ) async throws(StoreError) -> Account
    /// Keeps tokens that could not be committed sealed outside the database, where every later read
    /// finds them and the next open adopts them. Call it holding the account's refresh lock.
    func keepForRecovery(_ credentials: Credentials, of account: Account, accessTokenExpiresAt: Date?, refreshedAt: Date)
        async throws(StoreError) -> URL
    /// Reserves room for the account's recovery file before its refresh token is redeemed, so that
    /// tokens whose commit fails can still be kept on a disk that filled up meanwhile. Call it
    /// holding the account's refresh lock.
    ///
    /// - Throws: ``StoreError`` `.unavailable` when there is no room: then nothing may be redeemed.
    func reserveRecovery(for account: Account) async throws(StoreError)
    /// Keeps tokens that must not be used (a refresh reply naming another account, or tokens that do
    /// not parse) sealed in `quarantine/` in the data directory, which nothing adopts by itself: a
    /// person decides. Returns the file.
    func quarantine(_ credentials: Credentials, of account: Account) async throws(StoreError) -> URL
    /// Records a failure on an account: with `status` `.reauthRequired` it needs a new sign-in.
    func recordFailure(of account: Account, message: String, status: AccountStatus?, event: AuditEventKind) async throws(StoreError)
    /// How many credentials each key id seals (normally all under the store's key).
    func credentialCountsByKey() async throws(StoreError) -> [String: Int]

    // MARK: Serialisation

    /// Runs `body` holding the refresh locks of these accounts (taken in id order), so that no
    /// other process — nor the Codex CLI's refresh through chappie — redeems their refresh tokens
    /// meanwhile. A lock held by a process that dies is released.
    nonisolated(nonsending) func withRefreshLock<T>(onAccounts ids: [Int64], _ body: () async throws -> T) async throws -> T
    /// Runs `body` holding the key steady (no rotation can commit meanwhile), having taken up a key
    /// another process rotated to: what `body` seals stays openable. Refreshes hold it from
    /// redemption to commit.
    nonisolated(nonsending) func withKeyHeld<T>(_ body: () async throws -> T) async throws -> T
    /// Whether the key this store was unlocked with is still the store's key.
    func keyIsCurrent() async throws(StoreError) -> Bool
    /// Whether the key can change under this process without it being able to follow (another
    /// machine's operator replacing a team pool's key): a daemon then goes on, refusing to seal,
    /// rather than stop.
    var keyChangesElsewhere: Bool { get }

    // MARK: Usage

    /// Stores usage readings of an account, one row per limit.
    func recordUsage(_ snapshots: [ChappieUsageLimitSnapshot], for account: Account, source: UsageSource, at date: Date)
        async throws(StoreError)
    /// The newest `codex` reading of each account that has one, by account id.
    func latestUsage() async throws(StoreError) -> [Int64: UsageSample]
    /// An account's readings between two times, oldest first.
    func usageSamples(for account: Account, since: Date?, until: Date?) async throws(StoreError) -> [UsageSample]
    /// Deletes readings older than `date`; returns how many.
    func pruneUsage(olderThan date: Date) async throws(StoreError) -> Int
    /// Folds every `codex` reading between two times, by account then time, into `initial` without
    /// holding them all in memory (reports over millions of readings).
    func reduceUsageReadings<State: Sendable>(
        since: Date?, until: Date?, accounts: [Int64]?, into initial: State,
        _ update: @escaping @Sendable (inout State, UsageReading) throws -> Void
    ) async throws -> State
    /// The `codex` readings between two times by machine and account (one machine: all of them).
    func usageByMachine(since: Date?, until: Date?, accounts: [Int64]?) async throws(StoreError) -> [UsageMachineSummary]
    /// Every observed 5-hour and weekly window (by reset time) of the accounts, with its peak use.
    func usageWindows(since: Date?, until: Date?, accounts: [Int64]?) async throws(StoreError) -> [UsageWindowSummary]

    // MARK: Leases

    /// Takes a lease on the first of `candidates` that has a free slot (a whole-account lease needs
    /// all of them), in one transaction that first deletes expired leases (taking their slots over),
    /// and skips an account another machine is taking a lease on at that moment. Accounts whose
    /// status is not `ok` are passed over. `nil` when none has room.
    func acquireLease(on candidates: [Lease.Candidate], holder: String, ttl: Duration) async throws(StoreError) -> Lease?
    /// Extends a lease to `ttl` from now. Throws `.notFound` when it expired and was taken over, or
    /// was released.
    func renewLease(_ id: UUID, ttl: Duration) async throws(StoreError) -> Lease
    /// Gives a lease back (nothing happens if it is gone already).
    func releaseLease(_ id: UUID) async throws(StoreError)
    /// Every lease that has not expired, by account name then time.
    func leases() async throws(StoreError) -> [Lease]
    /// Claims the usage polls of these accounts for `period`: the ones this process is to poll. On
    /// the team pool, an account another machine claimed within the period is left out, so each is
    /// polled once per interval fleet-wide; on one machine (one daemon per data directory), all.
    func claimPolls(of ids: [Int64], for period: Duration) async throws(StoreError) -> Set<Int64>

    // MARK: Audit log

    /// The newest entries, newest first.
    func events(limit: Int) async throws(StoreError) -> [AuditEvent]
    /// Writes an entry about an account (or the store).
    func recordEvent(_ kind: AuditEventKind, account: Account?, detail: String) async throws(StoreError)

    // MARK: Settings

    /// The Codex home `switch` writes to when none is given.
    func defaultCodexHome() async throws(StoreError) -> String?
    /// Sets (or with `nil` clears) the default Codex home.
    func setDefaultCodexHome(_ path: String?) async throws(StoreError)
    /// How long usage readings are kept, in seconds, when set.
    func usageRetention() async throws(StoreError) -> Double?
    /// Sets (or with `nil` clears) how long usage readings are kept.
    func setUsageRetention(_ seconds: Double?) async throws(StoreError)
}

extension AccountStore {
    /// Runs `body` holding one account's refresh lock.
    nonisolated(nonsending) public func withRefreshLock<T>(on account: Account, _ body: () async throws -> T) async throws -> T {
        try await withRefreshLock(onAccounts: [account.id], body)
    }

    /// The accounts with these names, in that order (all of them, by name, when `names` is empty).
    /// Throws `.notFound` for the first name that is not stored.
    public func accounts(named names: [AccountName]) async throws(StoreError) -> [Account] {
        guard !names.isEmpty else { return try await accounts() }
        var found: [Account] = []
        for name in names { found.append(try await account(named: name)) }
        return found
    }

    /// Makes an account the active one.
    /// Makes a newly stored account the active one when none is: a new user's first account is
    /// ready for `token` and `ask` without a switch. No Codex home is written.
    package func activateIfNoneIs(_ account: Account) async throws(StoreError) -> Account {
        guard try await activeAccount() == nil else { return account }
        return try await activate(account.name, owningCodexHome: nil, detail: "the first account stored")
    }

    public func activate(_ name: AccountName) async throws(StoreError) -> Account {
        try await activate(name, owningCodexHome: nil, detail: "")
    }

    /// Stores refreshed (or adopted) tokens, with no audit detail.
    package func updateCredentials(
        of account: Account, to credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date, event: AuditEventKind
    ) async throws(StoreError) -> Account {
        try await updateCredentials(
            of: account, to: credentials, accessTokenExpiresAt: accessTokenExpiresAt, refreshedAt: refreshedAt, event: event, detail: "")
    }

    /// Records a failure without changing the account's status.
    public func recordFailure(of account: Account, message: String, event: AuditEventKind) async throws(StoreError) {
        try await recordFailure(of: account, message: message, status: nil, event: event)
    }

    /// Stores usage readings observed now.
    public func recordUsage(_ snapshots: [ChappieUsageLimitSnapshot], for account: Account, source: UsageSource) async throws(StoreError) {
        try await recordUsage(snapshots, for: account, source: source, at: Date())
    }

    /// The newest 50 entries of the audit log.
    public func events() async throws(StoreError) -> [AuditEvent] {
        try await events(limit: 50)
    }
}

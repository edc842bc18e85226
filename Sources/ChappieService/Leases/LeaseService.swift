public import ChappieCore
import ChappieStore
public import Foundation

/// Leases on accounts (`chappie lease`): a job takes the account with the most headroom that has a
/// free slot, renews its lease while it runs, and gives it back at the end. Works on the team pool
/// (fleet-wide) and on the local store (one machine) alike.
///
/// ```swift
/// let granted = try await services.leases.acquire(LeaseRequest(holder: "ci job 42"))
/// defer { Task { try await services.leases.release(granted.lease.id) } }
/// ```
public struct LeaseService: Sendable {
    let store: any AccountStore
    private let usage: UsageService
    /// What waits for a free slot are timed by (a test's clock moves when the test says).
    private let clock: Stopwatch

    init<C: Clock<Duration>>(store: any AccountStore, usage: UsageService, clock: C = ContinuousClock()) {
        self.store = store
        self.usage = usage
        self.clock = Stopwatch(clock)
    }

    /// A lease granted: the lease, its account, and the Codex home it hands out (the one the
    /// account owns on this machine, if any: the one `switch` wrote, or `chappie exec`'s private one).
    public struct Granted: Sendable {
        /// The lease.
        package var lease: Lease
        /// The account.
        public var account: Account
        /// `CODEX_HOME` for the holder, if the account owns a Codex home here.
        public var codexHome: String?
        /// The home's in-use lock (shared), taken when the home was made ready for the job
        /// (`--codex-home private`); `lease run` keeps it while the job runs.
        var inUseLock: Int32?

        /// The variables a holder must not inherit: a `CODEX_HOME` of chappie's caller (another
        /// account's, in a command `exec` started) when the leased account owns no home here.
        public var removedVariables: [String] { codexHome == nil ? ["CODEX_HOME"] : [] }

        /// The environment a holder runs with: `CHAPPIE_ACCOUNT`, `CHAPPIE_LEASE`, and `CODEX_HOME` where there is one.
        public var environment: [String: String] {
            var environment = ["CHAPPIE_ACCOUNT": account.name.rawValue, "CHAPPIE_LEASE": lease.id.uuidString.lowercased()]
            if let codexHome { environment["CODEX_HOME"] = codexHome }
            return environment
        }
    }

    /// Takes a lease: on `request.account`, else on the usable account with the most headroom that
    /// has a free slot. With no free slot, tries again every 2 seconds until `request.wait` has passed.
    ///
    /// - Parameter waiting: Told once, when the first attempt found no free slot.
    /// - Throws: ``ServiceError`` `.unavailable` (exit 75) when no slot came free in time;
    ///   `.signInRequired` (exit 77) at once when no account can be leased (none stored, or none usable).
    public func acquire(_ request: LeaseRequest, waiting: @Sendable (String) -> Void = { _ in }) async throws -> Granted {
        var granted = try await acquireHolding(request, waiting: waiting)
        // Nobody runs a job from here: the in-use lock goes with this call.
        if let lock = granted.inUseLock { close(lock) }
        granted.inUseLock = nil
        return granted
    }

    /// ``acquire(_:waiting:)``, keeping the in-use lock of a home made ready for the job.
    func acquireHolding(_ request: LeaseRequest, waiting: @Sendable (String) -> Void) async throws -> Granted {
        let elapsed = clock.start()
        var told = false
        var accounts = try await candidates(request.account, excluding: request.excluded)
        // Waiting helps only when slots are taken or windows full, never when no account can be used.
        if request.account == nil, accounts.isEmpty {
            let stored = try await store.accounts()
            throw ServiceError(
                .signInRequired,
                stored.isEmpty
                    ? "no account to lease: sign one in with chappie accounts add NAME"
                    : stored.allSatisfy({ $0.status == .reauthRequired })
                        ? "no account to lease: every account is signed out; sign one in again with chappie accounts add \(stored[0].name)"
                        : "no account to lease: none is usable (" + stored.map { "\($0.name): \($0.status.rawValue)" }.joined(separator: ", ") + ")")
        }
        // Readings older than 15 minutes are refreshed once, so that "most headroom" is current.
        if request.account == nil { _ = await usage.pollAll(accounts, maxAge: .seconds(15 * 60)) }
        // Accounts whose home could not be made ready here (`--best --codex-home private`).
        var passedOver: Set<Int64> = []
        while true {
            var ranked = try await rank(accounts.filter { !passedOver.contains($0.id) }, named: request.account != nil)
            if request.privateCodexHome {
                ranked = ranked.map { (Lease.Candidate(accountID: $0.candidate.accountID, wholeAccount: true), $0.codexHome) }
            }
            if let lease = try await store.acquireLease(on: ranked.map(\.candidate), holder: request.holder, ttl: request.ttl) {
                do {
                    let account = try await store.account(id: lease.accountID)
                    guard request.privateCodexHome else {
                        return Granted(
                            lease: lease, account: account, codexHome: ranked.first { $0.candidate.accountID == lease.accountID }?.codexHome)
                    }
                    return try await withHome(lease, of: account)
                } catch {
                    // Given back in a task of its own: a cancelled caller must not leave the slots taken.
                    try? await Task { try await release(lease.id) }.value
                    guard request.account == nil, request.privateCodexHome, !Task.isCancelled else { throw error }
                    passedOver.insert(lease.accountID)
                    waiting("\(FailureDescription(error)?.message ?? "\(error)"); trying another account")
                    continue
                }
            }
            guard elapsed() < request.wait else {
                throw ServiceError(
                    .unavailable,
                    "no account had a free lease slot for \(Self.describe(request.wait)); try again later, or raise the slots (chappie accounts set NAME --max-leases K)"
                )
            }
            if !told {
                waiting(
                    ranked.isEmpty
                        ? "every account is at its limit or reserve; waiting up to \(Self.describe(request.wait)) for one to free up"
                        : "every lease slot is taken; waiting up to \(Self.describe(request.wait)) for one to free up")
                told = true
            }
            try await clock.sleep(min(.seconds(2), request.wait - elapsed()))
            accounts = try await candidates(request.account, excluding: request.excluded)
        }
    }

    /// A lease that takes the whole account, with the account's Codex home made ready as `exec`
    /// makes it (claimed privately when it owns none, fresh tokens in it, its in-use lock held).
    private func withHome(_ lease: Lease, of account: Account) async throws -> Granted {
        let plan = try await ExecService(store: store, tokens: usage.tokens).prepare(account.name)
        return Granted(lease: lease, account: plan.account, codexHome: plan.codexHome.path, inUseLock: plan.inUseLock)
    }

    /// Extends a lease to `ttl` from now. Throws ``StoreError`` `.notFound` when it is gone.
    package func renew(_ id: UUID, ttl: Duration) async throws -> Lease {
        try await store.renewLease(id, ttl: ttl)
    }

    /// Gives a lease back.
    public func release(_ id: UUID) async throws {
        try await store.releaseLease(id)
    }

    /// Every lease that has not expired.
    package func list() async throws -> [Lease] {
        try await store.leases()
    }

    /// The accounts a lease may go to: the one named, or every `ok` account chappie may choose by
    /// itself (``Account/autoSwitch``) not excluded.
    private func candidates(_ name: AccountName?, excluding excluded: Set<Int64>) async throws -> [Account] {
        if let name { return [try await store.account(named: name)] }
        return try await store.accounts().filter { $0.status == .ok && $0.autoSwitch && !excluded.contains($0.id) }
    }

    /// The accounts in the order of preference: most headroom first (as `--best`), accounts without
    /// a reading after those with one, full ones left out unless named.
    private func rank(_ accounts: [Account], named: Bool) async throws -> [(candidate: Lease.Candidate, codexHome: String?)] {
        let latest = try await store.latestUsage()
        let read = UsageService.rank(accounts.compactMap { account in latest[account.id].map { (account, $0.snapshot) } })
        let ordered = read.filter { named || !$0.full }.map(\.account) + accounts.filter { latest[$0.id] == nil }
        // The holder runs as the account: a `codex` in the job uses the home the account owns.
        // `chappie exec`'s private home goes with the whole account.
        let privateCodexHomes = store.privateCodexHomes
        return ordered.map { account in
            let isPrivate =
                account.codexHome.map { URL(fileURLWithPath: $0).standardizedFileURL.deletingLastPathComponent() == privateCodexHomes } ?? false
            return (Lease.Candidate(accountID: account.id, wholeAccount: isPrivate), account.codexHome)
        }
    }

    /// "10 min", "2 h", "45 s".
    static func describe(_ duration: Duration) -> String {
        let seconds = Int(duration.components.seconds)
        if seconds >= 3600, seconds % 3600 == 0 { return "\(seconds / 3600) h" }
        if seconds >= 60, seconds % 60 == 0 { return "\(seconds / 60) min" }
        return "\(seconds) s"
    }
}

/// What a lease is asked for.
public struct LeaseRequest: Sendable {
    /// The account to lease, or `nil` for the one with the most headroom that has a free slot.
    public var account: AccountName?
    /// How long the lease lasts unless renewed. Default: 2 hours.
    public var ttl: Duration
    /// How long to wait for a free slot. Default: 10 minutes.
    public var wait: Duration
    /// Who holds it, for `lease list` and the audit log (never a secret).
    public var holder: String
    /// A Codex home of the job's own (`--codex-home private`): the account's, made private as
    /// `exec` makes it when it owns none; the lease then takes every slot of the account.
    public var privateCodexHome: Bool
    /// Accounts (by id) not to lease: those a failed-over job already ran as.
    var excluded: Set<Int64> = []

    /// A request; the holder defaults to this process (`pid N`).
    public init(
        account: AccountName? = nil, ttl: Duration = .seconds(2 * 3600), wait: Duration = .seconds(600), holder: String? = nil,
        privateCodexHome: Bool = false
    ) {
        self.account = account
        self.ttl = ttl
        self.wait = wait
        self.holder = holder ?? "pid \(getpid())"
        self.privateCodexHome = privateCodexHome
    }
}

/// Any `Clock` as a wait loop uses it: a stopwatch started now, and a sleep.
struct Stopwatch: Sendable {
    /// Starts timing; the closure returned tells the time since.
    let start: @Sendable () -> @Sendable () -> Duration
    let sleep: @Sendable (Duration) async throws -> Void

    init<C: Clock<Duration>>(_ clock: C) {
        start = {
            let started = clock.now
            return { started.duration(to: clock.now) }
        }
        sleep = { try await clock.sleep(for: $0) }
    }
}

package import Chappie
public import ChappieCore
package import ChappieNet
package import ChappieStore
public import Foundation

/// Reads accounts' usage windows, stores them, and picks the account with the most headroom.
public struct UsageService: Sendable {
    /// One account's poll.
    public struct PollResult: Sendable {
        /// The account.
        public var account: Account
        /// The limits read (the main `codex` one first), when the poll worked.
        public var snapshots: [ChappieUsageLimitSnapshot]
        /// The failure, when it did not.
        public var error: (any Error)?
        /// Whether a stored reading young enough was used instead of polling.
        public var cached: Bool
    }

    /// Why `--best` chose an account.
    public struct BestChoice: Sendable {
        /// The chosen account.
        public var account: Account
        /// Its reading.
        public var snapshot: ChappieUsageLimitSnapshot
        /// A sentence saying why, naming the binding window and the runners-up.
        public var reason: String
    }

    /// The store.
    package let store: any AccountStore
    /// Tokens and refreshes.
    public let tokens: TokenService
    private let http: ChappieHTTPClient

    /// Creates the service; `refreshEvents` is told of every refresh its token service makes.
    package init(
        store: any AccountStore, endpoints: ChappieEndpoints, http: ChappieHTTPClient? = nil,
        refreshEvents: @escaping @Sendable (TokenRefresher.Event) -> Void = { _ in }
    ) {
        let http = http ?? endpoints.httpClient()
        self.store = store
        self.http = http
        self.tokens = TokenService(store: store, endpoints: endpoints, http: http, refreshEvents: refreshEvents)
    }

    /// Polls `GET /backend-api/wham/usage` for one account and stores the reading (source `poll`).
    ///
    /// A 401 refreshes the tokens once (through the refresh discipline) and tries again. Each poll is
    /// written to the audit log with what was sent and what came back. The token is refreshed first
    /// only when it expires within `tokenMargin`.
    public func poll(_ account: Account, tokenMargin: Duration = .seconds(300)) async throws -> [ChappieUsageLimitSnapshot] {
        let refresher = tokens.refresher(margin: tokenMargin)
        var fresh = try await refresher.validCredentials(for: account)
        var response = try await fetch(account: fresh.account, token: fresh.credentials.accessToken)
        if response.status == 401 {
            fresh = try await refresher.validCredentials(for: fresh.account, force: true)
            response = try await fetch(account: fresh.account, token: fresh.credentials.accessToken)
        }
        let snapshots: [ChappieUsageLimitSnapshot]
        do throws(ServiceError) {
            guard response.isSuccess else {
                if EdgeRefusal.matches(status: response.status, body: response.body) {
                    throw ServiceError(.unavailable, "the usage endpoint: " + EdgeRefusal.explanation(originator: tokens.oauth.endpoints.originator))
                }
                let passes = response.status == 429 || response.status >= 500
                throw ServiceError(passes ? .unavailable : .invalidInput, "the usage endpoint answered HTTP \(response.status)")
            }
            do {
                snapshots = try ChappieUsageLimitSnapshot.decodeUsage(response.body)
            } catch {
                throw ServiceError(.invalidInput, "the usage reply could not be read: \(error)")
            }
        } catch {
            // The note `status` shows until a poll works again.
            try? await store.recordFailure(of: fresh.account, message: "\(UsageSample.pollFailurePrefix): \(error.message)", event: .usagePollFailed)
            throw ServiceError(error.code, "\(error.message) for \(account.name)")
        }
        try await store.recordUsage(snapshots, for: fresh.account, source: .poll)
        return snapshots
    }

    private func fetch(account: Account, token: String) async throws -> ChappieHTTPResponse {
        var request = ChappieHTTPRequest(url: tokens.oauth.endpoints.usageURL, headers: ["Accept": "application/json"])
        request.authorize(as: account, token: token, originator: tokens.oauth.endpoints.originator)
        request.totalTimeout = .seconds(30)
        let clock = ContinuousClock()
        let start = clock.now
        let response: ChappieHTTPResponse
        do {
            response = try await http.execute(request)
        } catch {
            try? await store.recordFailure(of: account, message: "\(UsageSample.pollFailurePrefix): \(error)", event: .usagePollFailed)
            throw error
        }
        let milliseconds = Int((clock.now - start) / .milliseconds(1))
        try await store.recordEvent(
            .usagePolled, account: account,
            detail:
                "GET \(request.url.absoluteString) (ChatGPT-Account-Id\(account.info.isFedRAMPAccount ? ", X-OpenAI-Fedramp" : "")) → HTTP \(response.status) in \(milliseconds) ms"
        )
        return response
    }

    /// Polls accounts `concurrency` at a time, each after a small random delay; an account whose
    /// newest reading is younger than `maxAge` is not polled again. Failures are reported per account.
    public func pollAll(
        _ accounts: [Account], maxAge: Duration = .seconds(60), concurrency: Int = 8, tokenMargin: Duration = .seconds(300)
    ) async -> [PollResult] {
        let latest = (try? await store.latestUsage()) ?? [:]
        let maxAgeSeconds = Double(maxAge.components.seconds)
        return await boundedMap(accounts, concurrency: concurrency) { account in
            if maxAgeSeconds > 0, let sample = latest[account.id], sample.age(at: Date()) < maxAgeSeconds {
                return PollResult(account: account, snapshots: [sample.snapshot], cached: true)
            }
            // A little jitter, so that many accounts do not hit the service in the same instant.
            try? await Task.sleep(for: .milliseconds(Int.random(in: 0...20)))
            do {
                return PollResult(account: account, snapshots: try await poll(account, tokenMargin: tokenMargin), cached: false)
            } catch {
                return PollResult(account: account, snapshots: [], error: error, cached: false)
            }
        }
    }

    /// Reads an account's tokens per UTC day (`wham/profiles/me`) and stores them; a failed read is
    /// noted as a read too (it is tried again an hour later).
    ///
    /// - Throws: ``ServiceError`` when the reply is not a profile or its statistics are unavailable.
    @discardableResult
    public func readTokenHistory(_ account: Account) async throws -> [(day: String, tokens: Int)] {
        let days: [(day: String, tokens: Int)]
        do {
            let response = try await tokens.send(for: account, over: http, to: "the profile endpoint", refreshingOn401: false, timeout: .seconds(10))
            {
                ChappieHTTPRequest(url: tokens.oauth.endpoints.profileURL, headers: ["Accept": "application/json"])
            }
            guard let read = DailyTokens.days(fromProfile: response.body) else {
                throw ServiceError(.unavailable, "the token history of \(account.name) could not be read (no daily_usage_buckets)")
            }
            days = read
        } catch {
            // An attempt counts as a read: a failing endpoint is asked again in an hour, not at every poll.
            try? await store.recordDailyTokens([], for: account, at: Date())
            throw error
        }
        try await store.recordDailyTokens(days, for: account, at: Date())
        try? await store.recordEvent(
            .usagePolled, account: account, detail: "GET \(tokens.oauth.endpoints.profileURL.absoluteString): tokens of \(days.count) days")
        return days
    }

    /// The accounts whose token history was last read `every` or longer ago (or never).
    public func tokenHistoryDue(_ accounts: [Account], every: Duration = .seconds(3600), now: Date = Date()) async throws -> [Account] {
        let read = try await store.dailyTokensReadAt()
        return accounts.filter { account in read[account.id].map { now.timeIntervalSince($0) >= Double(every.components.seconds) } ?? true }
    }

    /// Reads the token history of those of the accounts not read for an hour; the failures, by account.
    @discardableResult
    public func readDueTokenHistories(_ accounts: [Account], concurrency: Int = 8) async -> [(account: Account, error: any Error)] {
        guard let due = try? await tokenHistoryDue(accounts) else { return [] }
        return await boundedMap(due, concurrency: concurrency) { account -> (account: Account, error: any Error)? in
            do {
                try await readTokenHistory(account)
                return nil
            } catch {
                return (account, error)
            }
        }.compactMap { $0 }
    }

    /// The usable account with the most headroom: among `ok` accounts chappie may choose by itself
    /// (``Account/autoSwitch``), the highest priority, then the lowest used percent of the binding
    /// window (the fuller of 5-hour and weekly), counting an account at or above its reserve as full;
    /// ties go to the earlier reset. Readings older than `maxAge` are refreshed first. The accounts in
    /// `excluded` (by id) are not considered; with `kind`, only accounts of that workspace kind.
    ///
    /// - Throws: ``ServiceError`` when no account has room, saying when the first one frees up.
    public func best(
        maxAge: Duration = .seconds(15 * 60), excluding excluded: Set<Int64> = [], kind: WorkspaceKind? = nil
    ) async throws -> BestChoice {
        let all = try await store.accounts().filter { $0.status == .ok && !excluded.contains($0.id) }
        let stored = all.filter { $0.autoSwitch && (kind == nil || WorkspaceKind(of: $0) == kind) }
        if stored.isEmpty, !all.isEmpty {
            let left = all.filter { !$0.autoSwitch }.map(\.name.rawValue)
            throw ServiceError(
                .invalidInput,
                "no account chappie may choose by itself is usable"
                    + (left.isEmpty ? "" : " (\(left.joined(separator: ", ")): accounts set NAME --auto on lets it choose one)")
                    + (kind.map { "; only \($0.rawValue) accounts were considered" } ?? ""))
        }
        // One whose tokens do not open here (damaged, or on its way to the team pool) cannot be switched to.
        let problems = try await store.credentialProblems(of: stored)
        let accounts = stored.filter { problems[$0.id] == nil }
        guard !accounts.isEmpty else {
            throw ServiceError(.invalidInput, "no account is usable (none is stored with status ok and credentials that open)")
        }
        _ = await pollAll(accounts, maxAge: maxAge)
        let latest = try await store.latestUsage()
        let ranked = Self.rank(accounts.compactMap { account in latest[account.id].map { (account, $0.snapshot) } })
        guard let first = ranked.first, !first.full else {
            let reset = ranked.compactMap { $0.snapshot.bindingWindow?.resetsAt }.min()
            throw ServiceError(
                .invalidInput,
                ranked.isEmpty
                    ? "no account has a usage reading; run chappie usage poll --all"
                    : "every account is at its limit or reserve" + (reset.map { "; the first window resets at \($0.formatted(.iso8601))" } ?? "")
                        + (kind.map { "; only \($0.rawValue) accounts were considered (the daemon's --auto-switch-any-kind takes any)" } ?? ""))
        }
        let others = ranked.dropFirst().prefix(3).map {
            "\($0.account.name) \(Self.describe($0.snapshot))\($0.full ? " (no room: at its limit or reserve)" : "")"
        }
        let reason =
            "\(first.account.name) has the most headroom: \(Self.describe(first.snapshot))"
            + (others.isEmpty ? "" : "; next: " + others.joined(separator: ", "))
        return BestChoice(account: first.account, snapshot: first.snapshot, reason: reason)
    }

    /// The accounts with these names (all of them when `names` is empty), in that order.
    public func accounts(named names: [AccountName]) async throws -> [Account] {
        try await store.accounts(named: names)
    }

    /// The newest `codex` reading of each account that has one, by account id.
    public func latest() async throws -> [Int64: UsageSample] {
        try await store.latestUsage()
    }

    /// An account's readings between two times, oldest first.
    public func history(of name: AccountName, since: Date?, until: Date?) async throws -> [UsageSample] {
        try await store.usageSamples(for: try await store.account(named: name), since: since, until: until)
    }

    /// A report over the history (``UsageReport``).
    public func report(
        of names: [AccountName], since: Date?, until: Date?, grouping: UsageReport.Grouping, timeZone: TimeZone, tokens: Bool = false
    ) async throws -> UsageReport {
        try await UsageReport.build(
            store: store, accounts: try await accounts(named: names), since: since, until: until, grouping: grouping, timeZone: timeZone,
            tokens: tokens)
    }

    /// The self-contained HTML report of these accounts (all when `names` is empty) over a period
    /// (``UsageHTMLReport``).
    public func htmlReport(of names: [AccountName], since: Date?, until: Date?, timeZone: TimeZone, tokens: Bool = false) async throws -> String {
        try await UsageHTMLReport.render(
            from: store, accounts: try await accounts(named: names), since: since, until: until, timeZone: timeZone, tokens: tokens)
    }

    /// Deletes readings older than `age` (by default the usage-retention setting, else 365 days).
    ///
    /// - Returns: How many were deleted, and the cut-off.
    public func prune(olderThan age: Duration?) async throws -> (deleted: Int, cutoff: Date) {
        var retention = age
        if retention == nil { retention = try await store.usageRetention().map { .seconds(Int64($0)) } }
        let cutoff = Date().addingTimeInterval(-Double((retention ?? .seconds(365 * 86400)).components.seconds))
        return (try await store.pruneUsage(olderThan: cutoff), cutoff)
    }

    /// An account at its limit (or reserve) by its newest stored reading: how full, and when the
    /// binding window resets. `nil` when it has room, or no reading.
    public func fullness(of account: Account) async throws -> (description: String, resetsAt: Date?)? {
        guard let reading = try await store.latestUsage()[account.id],
            Headroom(reading.snapshot, reservePercent: account.reservePercent).isFull,
            (reading.snapshot.bindingWindow?.resetsAt).map({ $0 > Date() }) ?? true
        else { return nil }
        return (Self.describe(reading.snapshot), reading.snapshot.bindingWindow?.resetsAt)
    }

    /// Accounts ordered as ``best(maxAge:excluding:kind:)`` chooses: those with room first, by
    /// priority, then by headroom.
    static func rank(_ candidates: [(Account, ChappieUsageLimitSnapshot)]) -> [(account: Account, snapshot: ChappieUsageLimitSnapshot, full: Bool)] {
        candidates.map { account, snapshot in
            (account, snapshot, Headroom(snapshot, reservePercent: account.reservePercent).isFull)
        }.sorted { a, b in
            if a.full != b.full { return !a.full }
            if a.account.priority != b.account.priority { return a.account.priority > b.account.priority }
            let (ua, ub) = (a.snapshot.bindingWindow?.usedPercent ?? 0, b.snapshot.bindingWindow?.usedPercent ?? 0)
            if ua != ub { return ua < ub }
            return (a.snapshot.bindingWindow?.resetsAt ?? .distantFuture) < (b.snapshot.bindingWindow?.resetsAt ?? .distantFuture)
        }
    }

    /// "5-hour 12 % (binding), weekly 40 %".
    static func describe(_ snapshot: ChappieUsageLimitSnapshot) -> String {
        let binding = snapshot.bindingWindow
        return [("5-hour", snapshot.shortWindow), ("weekly", snapshot.longWindow)].compactMap { name, window in
            window.map { "\(name) \(Int($0.usedPercent.rounded())) %\($0 == binding ? " (binding)" : "")" }
        }.joined(separator: ", ")
    }

    /// When a window runs out at the recent burn rate: from the samples of its current window in the
    /// last two hours. `nil` when use is not rising or there are too few samples.
    public func forecast(for account: Account, now: Date = Date()) async throws -> (fiveHour: Date?, weekly: Date?) {
        let samples = try await store.usageSamples(for: account, since: now.addingTimeInterval(-7200), until: nil).filter { $0.limitID == "codex" }
        func runOut(_ window: (ChappieUsageLimitSnapshot) -> ChappieUsageWindow?) -> Date? {
            guard let last = samples.last, let current = window(last.snapshot) else { return nil }
            let same = samples.filter { window($0.snapshot)?.resetsAt == current.resetsAt }
            guard let first = same.first, let start = window(first.snapshot), last.observedAt > first.observedAt else { return nil }
            let rate = (current.usedPercent - start.usedPercent) / last.observedAt.timeIntervalSince(first.observedAt)
            guard rate > 0 else { return nil }
            let limit = account.reservePercent ?? 100
            let at = last.observedAt.addingTimeInterval(max(0, limit - current.usedPercent) / rate)
            if let reset = current.resetsAt, at > reset { return nil }
            return at
        }
        return (runOut(\.shortWindow), runOut(\.longWindow))
    }
}

/// Whether an account is a person's own (free, plus, pro) or a workspace's seat (team, business,
/// enterprise, edu): auto-switch keeps to the kind of the account it leaves, so that work does not
/// move onto a personal account, nor a personal project onto a work seat.
public enum WorkspaceKind: String, Sendable {
    case personal, workspace

    /// The kind of an account's plan (an unknown plan counts as personal).
    public init(of account: Account) {
        self = account.info.plan?.isWorkspace == true ? .workspace : .personal
    }
}

public import Chappie
public import ChappieCore
public import ChappieStore
import ChappieVault
public import Foundation
public import Logging
public import ServiceLifecycle

/// `chappie daemon`: keeps every account's tokens fresh (scheduled from each token's `exp`), polls
/// usage on an interval, optionally switches away from an account that hit its limit, and answers
/// a local API on a Unix socket. SIGTERM/SIGINT (through swift-service-lifecycle) stop it cleanly:
/// a refresh already sent is finished and committed first.
public final class Daemon: Service {
    private let store: AccountStore
    private let usage: UsageService
    private let configuration: DaemonConfiguration
    private let logger: Logger
    private let state: DaemonState
    private let instance: FileLock

    /// Creates a daemon over an open store.
    ///
    /// - Parameter instance: The data directory's claim from ``DaemonInstance/claim(in:)``, held
    ///   until the daemon is released: the socket is only replaced or removed under it.
    public init(store: AccountStore, endpoints: ChappieEndpoints, configuration: DaemonConfiguration, instance: FileLock, logger: Logger) {
        self.store = store
        self.instance = instance
        self.usage = UsageService(store: store, endpoints: endpoints)
        self.configuration = configuration
        self.logger = logger
        self.state = DaemonState(initialBackoff: configuration.initialBackoff, maximumBackoff: configuration.maximumBackoff)
    }

    /// Runs until cancelled or shut down gracefully.
    public func run() async throws {
        let listener = try UnixSocket.listen(at: configuration.socket.path)
        logger.info("daemon started", metadata: [
            "socket": "\(configuration.socket.path)", "refresh.margin_s": "\(configuration.refreshMargin.components.seconds)",
            "poll.interval_s": "\(configuration.pollInterval.components.seconds)", "auto_switch": "\(configuration.autoSwitch)",
        ])
        let server: SocketServer
        do {
            server = try SocketServer(listener: listener, limits: SocketServer.Limits(requestDeadline: configuration.requestTimeout)) { [self] request in
                await self.answer(request)
            }
        } catch {
            close(listener)
            throw error
        }
        server.start()
        defer {
            server.stop()
            unlink(configuration.socket.path)
            logger.info("daemon stopped")
        }
        try await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await self.refreshLoop() }
                group.addTask { await self.pollLoop() }
                group.addTask { try await self.watchKey() }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    /// Takes up the store's new key when another process rotates it (reading the key file again);
    /// ends the daemon (with an error, so that systemd restarts it) when that is not possible (a
    /// passphrase, or a key file that does not hold the new key): everything it would seal from
    /// then on would be unreadable.
    private func watchKey() async throws {
        var known = store.key.id
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(5))
            if (try? store.keyIsCurrent()) == false {
                do {
                    try store.reloadKeyIfRotated()
                } catch {
                    logger.critical("the store's key was rotated by another process and the new key cannot be read; stopping (start the daemon again)")
                    throw error
                }
            }
            // A refresh or a read may have taken up the new key first.
            if store.key.id != known {
                known = store.key.id
                logger.notice("the store's key was rotated by another process; took up the new key", metadata: ["key": "\(known)"])
            }
        }
    }

    // MARK: Refreshing

    /// Sleeps until the next account is due (its `exp` minus the margin and a per-account jitter,
    /// or the end of its backoff), refreshes the due ones, and looks again at least every rescan interval.
    private func refreshLoop() async {
        while !Task.isCancelled {
            let now = Date()
            var due: [Account] = []
            var next = now.addingTimeInterval(Double(configuration.rescanInterval.components.seconds))
            do {
                for account in try store.accounts() where account.status == .ok {
                    var when = refreshTime(for: account)
                    if let until = await state.backoffUntil(account.id) { when = max(when, until) }
                    // Never look at the same account twice within a few seconds, whatever its token says.
                    if let recent = await state.recentAttempt(account.id) { when = max(when, recent.addingTimeInterval(5)) }
                    if when <= now { due.append(account) } else { next = min(next, when) }
                }
            } catch {
                logger.warning("cannot read the accounts; trying again", metadata: ["error": "\(error)"])
            }
            if !due.isEmpty {
                await refresh(due)
                continue
            }
            try? await Task.sleep(for: .milliseconds(max(50, Int(next.timeIntervalSinceNow * 1000))))
        }
    }

    /// Up to 30 s more than the margin, fixed per account, so that accounts do not all refresh at once.
    private func jitter(for account: Account) -> Int64 {
        Int64(account.id.magnitude % 31)
    }

    /// When an account should be refreshed: `exp` − (margin + its jitter); without a readable `exp`,
    /// 8 days after the last refresh (as the refresher itself decides).
    private func refreshTime(for account: Account) -> Date {
        let lead = Double(configuration.refreshMargin.components.seconds + jitter(for: account))
        if let expiry = account.accessTokenExpiresAt { return expiry.addingTimeInterval(-lead) }
        return (account.lastRefreshAt ?? .distantPast).addingTimeInterval(8 * 86400 - lead)
    }

    private func refresh(_ accounts: [Account]) async {
        _ = await boundedMap(accounts, concurrency: configuration.concurrency) { [self] account in
            await state.attempted(account.id)
            // The refresher's margin includes this account's jitter, so that a due account is refreshed.
            let refresher = usage.tokens.refresher(margin: configuration.refreshMargin + .seconds(jitter(for: account)))
            do {
                let fresh = try await refresher.validCredentials(for: account)
                if fresh.outcome != .stillValid { await state.refreshed(account.id) }
                logger.info("token fresh", metadata: [
                    "account": "\(account.name)", "outcome": "\(fresh.outcome.rawValue)",
                    "expires_in_s": "\(Int(fresh.expiresAt?.timeIntervalSinceNow ?? 0))",
                ])
            } catch let error as ChappieAuthError where error.requiresReauthentication {
                await state.failed(account.id, refresh: true)
                logger.error("account needs a new sign-in", metadata: ["account": "\(account.name)", "error": "\(error.errorDescription ?? "")"])
            } catch {
                let until = await state.failed(account.id, refresh: true)
                logger.warning("refresh failed; backing off", metadata: [
                    "account": "\(account.name)", "error": "\(error)", "retry_at": "\(until.formatted(.iso8601))",
                ])
            }
        }
    }

    // MARK: Polling and auto-switch

    private func pollLoop() async {
        while !Task.isCancelled {
            await pollOnce()
            if configuration.autoSwitch { await autoSwitchIfNeeded() }
            let interval = Double(configuration.pollInterval.components.seconds) * Double.random(in: 0.9...1.1)
            try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
        }
    }

    private func pollOnce() async {
        var accounts: [Account] = []
        do {
            for account in try store.accounts() where account.status == .ok {
                if await state.backoffUntil(account.id) == nil { accounts.append(account) }
            }
        } catch {
            logger.warning("cannot read the accounts; trying again", metadata: ["error": "\(error)"])
            return
        }
        let maxAge = Duration.seconds(max(1, configuration.pollInterval.components.seconds / 2))
        let results = await usage.pollAll(
            accounts, maxAge: maxAge, concurrency: configuration.concurrency, tokenMargin: configuration.refreshMargin)
        for result in results where !result.cached {
            if let error = result.error {
                let until = await state.failed(result.account.id, refresh: false)
                logger.warning("usage poll failed; backing off", metadata: [
                    "account": "\(result.account.name)", "error": "\(error)", "retry_at": "\(until.formatted(.iso8601))",
                ])
            } else {
                await state.polled(result.account.id)
                let main = result.snapshots.first
                logger.info("usage polled", metadata: [
                    "account": "\(result.account.name)",
                    "five_hour_percent": "\(main?.shortWindow?.usedPercent ?? -1)", "weekly_percent": "\(main?.longWindow?.usedPercent ?? -1)",
                ])
            }
        }
    }

    /// Once per limit event of the active account (a reading at 100 % or limit reached), switches to
    /// the best other account, exports it for Codex if configured, and logs the switch.
    private func autoSwitchIfNeeded() async {
        do {
            guard let active = try store.activeAccount(), let reading = try store.latestUsage()[active.id] else { return }
            let snapshot = reading.snapshot
            guard let binding = snapshot.bindingWindow, snapshot.limitReached || binding.usedPercent >= 100 else { return }
            let event = "\(active.id):\(Int(binding.resetsAt?.timeIntervalSince1970 ?? 0))"
            guard await state.isNewLimitEvent(event) else { return }
            let choice: UsageService.BestChoice
            do {
                choice = try await usage.best(maxAge: configuration.pollInterval)
            } catch {
                logger.warning("active account is at its limit, and no other has room", metadata: ["account": "\(active.name)", "reason": "\(error)"])
                return
            }
            guard choice.account.id != active.id else { return }
            let codexHome = try configuration.codexHome ?? store.defaultCodexHome().map { URL(fileURLWithPath: $0) }
            _ = try await AccountsService(store: store).switchTo(choice.account.name, codexHome: codexHome)
            try store.recordEvent("auto_switched", account: choice.account, detail: "from \(active.name) at its limit: \(choice.reason)")
            await state.switched()
            logger.notice("switched account", metadata: ["from": "\(active.name)", "to": "\(choice.account.name)", "reason": "\(choice.reason)"])
        } catch {
            logger.warning("auto-switch failed", metadata: ["error": "\(error)"])
        }
    }

    // MARK: The local API

    /// Answers one request from the socket.
    func answer(_ request: DaemonRequest) async -> DaemonReply {
        do {
            switch request.command {
            case "token":
                let name = try request.account.map { try AccountName($0) }
                let margin = Duration.seconds(request.marginSeconds ?? 300)
                let fresh = try await usage.tokens.token(for: name, margin: margin)
                return DaemonReply(ok: true, token: DaemonReply.Token(
                    name: fresh.account.name.rawValue, accessToken: fresh.credentials.accessToken, expiresAt: fresh.expiresAt,
                    chatgptAccountID: fresh.account.info.accountID, fedramp: fresh.account.info.isFedRAMPAccount, warning: fresh.warning))
            case "status":
                let accounts = try store.accounts()
                let names = Dictionary(uniqueKeysWithValues: accounts.map { ($0.id, $0.name.rawValue) })
                let backingOff = await state.backingOff()
                return DaemonReply(ok: true, status: DaemonReply.Status(
                    pid: getpid(), startedAt: state.startedAt, lastRefreshAt: await state.lastRefreshAt, lastPollAt: await state.lastPollAt,
                    refreshes: await state.refreshes, refreshFailures: await state.refreshFailures, polls: await state.polls,
                    pollFailures: await state.pollFailures, switches: await state.switches,
                    backingOff: Dictionary(uniqueKeysWithValues: backingOff.compactMap { id, date in names[id].map { ($0, date) } })),
                    accounts: accounts)
            case "accounts":
                return DaemonReply(ok: true, accounts: try store.accounts())
            case "usage":
                return DaemonReply(ok: true, accounts: try store.accounts(), usage: try store.latestUsage())
            case "metrics":
                return DaemonReply(ok: true, metrics: try await metrics())
            default:
                return .failure("unknown command \"\(request.command.prefix(40))\": use token, status, accounts, usage or metrics", exitCode: 2)
            }
        } catch let error as ChappieAuthError {
            return .failure(error.errorDescription ?? "\(error)", exitCode: error.recovery.exitCode)
        } catch let error as AccountNameError {
            return .failure(error.description, exitCode: 2)
        } catch let error as StoreError {
            return .failure(error.message, exitCode: error.isConfigurationProblem ? 78 : 1)
        } catch {
            return .failure("\(error)", exitCode: 1)
        }
    }

    /// Prometheus text exposition of the counters and each account's state.
    private func metrics() async throws -> String {
        func escape(_ value: String) -> String {
            value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
        }
        var lines: [String] = []
        func counter(_ name: String, _ help: String, _ value: Int) {
            lines += ["# HELP \(name) \(help)", "# TYPE \(name) counter", "\(name) \(value)"]
        }
        counter("chappie_refreshes_total", "Token refreshes that succeeded.", await state.refreshes)
        counter("chappie_refresh_failures_total", "Token refreshes that failed.", await state.refreshFailures)
        counter("chappie_polls_total", "Usage polls that succeeded.", await state.polls)
        counter("chappie_poll_failures_total", "Usage polls that failed.", await state.pollFailures)
        counter("chappie_switches_total", "Automatic account switches.", await state.switches)
        lines += ["# HELP chappie_uptime_seconds Seconds since the daemon started.", "# TYPE chappie_uptime_seconds gauge",
                  "chappie_uptime_seconds \(Int(Date().timeIntervalSince(state.startedAt)))"]
        let accounts = try store.accounts()
        let latest = try store.latestUsage()
        lines += ["# HELP chappie_account_used_percent Used percent of each usage window.", "# TYPE chappie_account_used_percent gauge"]
        for account in accounts {
            guard let snapshot = latest[account.id]?.snapshot else { continue }
            for (window, value) in [("5h", snapshot.shortWindow), ("weekly", snapshot.longWindow)] {
                if let value { lines.append("chappie_account_used_percent{account=\"\(escape(account.name.rawValue))\",window=\"\(window)\"} \(value.usedPercent)") }
            }
        }
        lines += ["# HELP chappie_account_token_seconds_to_expiry Seconds until the stored access token expires.",
                  "# TYPE chappie_account_token_seconds_to_expiry gauge"]
        for account in accounts {
            if let expiry = account.accessTokenExpiresAt {
                lines.append("chappie_account_token_seconds_to_expiry{account=\"\(escape(account.name.rawValue))\"} \(Int(expiry.timeIntervalSinceNow))")
            }
        }
        lines += ["# HELP chappie_account_ok Whether the account is usable (1) or needs attention (0).", "# TYPE chappie_account_ok gauge"]
        for account in accounts {
            lines.append("chappie_account_ok{account=\"\(escape(account.name.rawValue))\"} \(account.status == .ok ? 1 : 0)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

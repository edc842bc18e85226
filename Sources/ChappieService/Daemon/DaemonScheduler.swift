import Chappie
import ChappieStore
import ChappieCore
import Foundation
import Logging

/// The daemon's timing: refreshes each account's tokens ahead of their `exp` (with a per-account
/// jitter and a backoff after failures), and polls usage on an interval.
struct DaemonScheduler: Sendable {
    let store: any AccountStore
    let usage: UsageService
    let configuration: DaemonConfiguration
    let state: DaemonState
    let logger: Logger
    /// Alerts and banked resets, when configured.
    var alerts: DaemonAlerts?
    /// Reads the rate limits Codex writes into the rollouts of the homes chappie owns.
    var rollouts: RolloutLimitsWatcher?
    /// The time now: the system's, or a test's (the same as ``DaemonState``'s).
    var now: @Sendable () -> Date = { Date() }

    var refreshPlan: RefreshPlan { RefreshPlan(margin: configuration.refreshMargin, rescanInterval: configuration.rescanInterval) }

    // MARK: Refreshing

    /// Sleeps until the next account is due (its `exp` minus the margin and a per-account jitter,
    /// or the end of its backoff), refreshes the due ones, and looks again at least every rescan interval.
    func refreshLoop() async {
        let plan = refreshPlan
        while !Task.isCancelled {
            let now = self.now()
            var (due, next) = ([Account](), now.addingTimeInterval(Double(configuration.rescanInterval.components.seconds)))
            do {
                (due, next) = plan.due(
                    try await store.accounts(), backoffUntil: await state.backingOff(), lastAttempts: await state.recentAttempts(), now: now)
            } catch {
                logger.warning("cannot read the accounts; trying again", metadata: ["error": "\(error)"])
            }
            if !due.isEmpty {
                await refresh(due)
                continue
            }
            try? await Task.sleep(for: .milliseconds(max(50, Int(next.timeIntervalSince(self.now()) * 1000))))
        }
    }

    private func refresh(_ accounts: [Account]) async {
        _ = await boundedMap(accounts, concurrency: configuration.concurrency) { account in
            // Stopping (SIGTERM): refreshes already at the issuer finish; no new one starts.
            guard !Task.isCancelled else { return }
            await state.attempted(account.id)
            // The refresher's margin includes this account's jitter, so that a due account is refreshed.
            let refresher = usage.tokens.refresher(margin: configuration.refreshMargin + .seconds(refreshPlan.jitter(for: account)))
            do {
                let fresh = try await refresher.validCredentials(for: account)
                if fresh.outcome != .stillValid { await state.refreshed(account.id) }
                logger.info(
                    "token fresh",
                    metadata: [
                        "account": "\(account.name)", "outcome": "\(fresh.outcome.rawValue)",
                        "expires_in_s": "\(Int(fresh.expiresAt?.timeIntervalSinceNow ?? 0))",
                    ])
            } catch let error as ChappieAuthError where error.requiresReauthentication {
                await state.failed(account.id, refresh: true, error: error)
                logger.error("account needs a new sign-in", metadata: ["account": "\(account.name)", "error": "\(error.errorDescription ?? "")"])
                await alerts?.signInRequired(account)
            } catch {
                let until = await state.failed(account.id, refresh: true, error: error)
                logger.warning(
                    "refresh failed; backing off",
                    metadata: [
                        "account": "\(account.name)", "error": "\(error)", "retry_at": "\(until.formatted(.iso8601))",
                    ])
            }
        }
    }

    // MARK: Polling

    /// Every watch tick: polls the accounts whose reading is due (``PollPlan``; every usable
    /// account at start). Readings other processes stored count.
    func pollLoop() async {
        let plan = PollPlan(
            interval: configuration.pollInterval, nearLimitInterval: configuration.nearLimitPollInterval,
            nearLimitPercent: configuration.nearLimitPercent)
        var starting = true
        // Readings older than a poll round were told of by the daemon that ran then (or are stale);
        // newer ones, stored while this one was starting or stopped for a moment, are told of now
        // (alerts-state.json keeps what fired from firing twice).
        if configuration.alertsOnEveryReading, let latest = try? await store.latestUsage() {
            let stale = now().addingTimeInterval(-600)
            for (id, reading) in latest where reading.observedAt < stale { _ = await state.isNewForAlerts(id, observedAt: reading.observedAt) }
        }
        while !Task.isCancelled {
            await pollDue(plan, everyAccount: starting)
            starting = false
            await readRollouts()
            if configuration.alertsOnEveryReading { await alertOnNewReadings() }
            try? await Task.sleep(for: configuration.watchTick)
        }
    }

    /// Stores what running Codex processes wrote of their rate limits (``RolloutLimitsWatcher``).
    private func readRollouts() async {
        guard let rollouts else { return }
        for stored in await rollouts.sweep(now: now()) {
            logger.info(
                "usage read from Codex's session log",
                metadata: [
                    "account": "\(stored.account.name)", "five_hour_percent": "\(stored.snapshot.shortWindow?.usedPercent ?? -1)",
                    "weekly_percent": "\(stored.snapshot.longWindow?.usedPercent ?? -1)",
                ])
        }
    }

    /// Alerts for every reading stored since the last look, whichever process stored it.
    private func alertOnNewReadings() async {
        guard let alerts, let latest = try? await store.latestUsage(), let accounts = try? await store.accounts() else { return }
        for account in accounts {
            guard let reading = latest[account.id], await state.isNewForAlerts(account.id, observedAt: reading.observedAt) else { continue }
            await alerts.polled(account, reading.snapshot)
        }
    }

    private func pollDue(_ plan: PollPlan, everyAccount: Bool) async {
        var accounts: [Account] = []
        do {
            for account in try await store.accounts() where account.status == .ok {
                if await state.backoffUntil(account.id) == nil { accounts.append(account) }
            }
            if !everyAccount { accounts = plan.due(accounts, latest: try await store.latestUsage(), now: now()) }
        } catch {
            logger.warning("cannot read the accounts; trying again", metadata: ["error": "\(error)"])
            return
        }
        guard !accounts.isEmpty else { return }
        // On a team pool, the daemons of several machines share the polls: each account is polled by
        // the one that claims it (for most of the shorter interval); the others then find its reading
        // fresh.
        do {
            let claimed = try await store.claimPolls(
                of: accounts.map(\.id), for: min(configuration.pollInterval, configuration.nearLimitPollInterval) * 0.8)
            accounts = accounts.filter { claimed.contains($0.id) }
        } catch {
            logger.warning("cannot claim the usage polls; trying again", metadata: ["error": "\(error)"])
            return
        }
        let results = await usage.pollAll(
            accounts, maxAge: .zero, concurrency: configuration.concurrency, tokenMargin: configuration.refreshMargin)
        await state.attemptedPolls()
        for result in results where !result.cached {
            if let error = result.error {
                if (error as? any ChappieRecoverableError)?.recovery == .signInAgain { await alerts?.signInRequired(result.account) }
                let until = await state.failed(result.account.id, refresh: false, error: error)
                logger.warning(
                    "usage poll failed; backing off",
                    metadata: [
                        "account": "\(result.account.name)", "error": "\(error)", "retry_at": "\(until.formatted(.iso8601))",
                    ])
            } else {
                await state.polled(result.account.id)
                let main = result.snapshots.first
                logger.info(
                    "usage polled",
                    metadata: [
                        "account": "\(result.account.name)",
                        "five_hour_percent": "\(main?.shortWindow?.usedPercent ?? -1)", "weekly_percent": "\(main?.longWindow?.usedPercent ?? -1)",
                    ])
                // A store of this machine: the look at every reading after the polls tells of it.
                if let main, !configuration.alertsOnEveryReading { await alerts?.polled(result.account, main) }
            }
        }
        // Tokens per day, at most hourly per account, for the accounts this daemon polls; after the
        // polls' results are taken in, so a slow profile endpoint holds up nothing of theirs.
        let polled = results.filter { $0.error == nil }.map(\.account)
        for (account, error) in await usage.readDueTokenHistories(polled, concurrency: configuration.concurrency) {
            logger.info("token history not read; tried again in an hour", metadata: ["account": "\(account.name)", "error": "\(error)"])
        }
    }
}

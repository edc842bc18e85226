import ChappieCore
import ChappieStore
import Foundation
import Logging
import Synchronization

/// The daemon's alerts and banked resets: after each reading stored on this machine's store,
/// whichever process stored it (on a team pool, after each poll it made: only the daemon that
/// polled an account alerts for it), after a refresh that needs a sign-in, and after an auto-switch. With `--auto-redeem`, an account that reaches its limit redeems one banked reset
/// credit, if it has one; nothing is ever redeemed otherwise.
struct DaemonAlerts: Sendable {
    let monitor: AlertMonitor
    /// `nil` when no target is configured: readings are still followed (for `--auto-redeem`).
    let dispatcher: AlertDispatcher?
    let credits: ResetCreditsService
    let autoRedeem: Bool
    let logger: Logger

    /// A reading this daemon polled. A window that reached its limit and has a banked credit is
    /// told of (`credit_available`), unless `--auto-redeem` redeems one: tried at every poll while
    /// the window stays at its limit, until one redemption of the cycle works.
    func polled(_ account: Account, _ snapshot: ChappieUsageLimitSnapshot) async {
        await monitor.usable(account)
        let observation = await monitor.observe(account, snapshot)
        for event in observation.events { dispatcher?.send(event) }
        if monitor.saveFailures.exchange(0, ordering: .relaxed) > 0 {
            logger.warning("cannot write alerts-state.json in the data directory: a restarted daemon may repeat an alert")
        }
        let window: ChappieUsageWindow.Kind
        if autoRedeem, let full = observation.atLimit.first, await !monitor.redeemedThisCycle(account, window: full) {
            window = full
        } else if !autoRedeem, dispatcher != nil, let reached = observation.reachedLimit.first {
            window = reached
        } else {
            return
        }
        let available: [ResetCreditsService.Credit]
        do {
            available = try await credits.list(account).filter { $0.isAvailable() }
        } catch {
            logger.info("cannot list reset credits", metadata: ["account": "\(account.name)", "error": "\(error)"])
            return
        }
        guard !available.isEmpty else { return }
        if autoRedeem {
            do {
                let outcome = try await credits.redeem(account)
                // Once the service has answered for this cycle, it is not asked again in it.
                await monitor.noteRedeemed(account, window: window)
                logger.notice("redeemed a reset credit (--auto-redeem)", metadata: ["account": "\(account.name)", "outcome": "\(outcome.rawValue)"])
                return
            } catch {
                // Only a failure that may pass (no answer, a 5xx, a 429) is tried again at the next poll.
                let passes = (error as? ServiceError)?.code == .unavailable
                if !passes { await monitor.noteRedeemed(account, window: window) }
                logger.warning(
                    passes
                        ? "redeeming a reset credit failed; tried again at the next poll"
                        : "redeeming a reset credit failed; not tried again this cycle",
                    metadata: ["account": "\(account.name)", "error": "\(error)"])
            }
        }
        // Told once per cycle, when the window reaches its limit (with --auto-redeem: when redeeming failed then).
        guard observation.reachedLimit.contains(window) else { return }
        let binding = window == .fiveHour ? snapshot.shortWindow : snapshot.longWindow
        dispatcher?.send(
            AlertEvent(
                .creditAvailable, account: account.name.rawValue, window: window, usedPercent: binding?.usedPercent, resetsAt: binding?.resetsAt,
                message:
                    "\(account.name) is at its limit and has \(available.count) banked reset credit\(available.count == 1 ? "" : "s"): chappie credits redeem \(account.name)"
            ))
    }

    /// A refresh or poll that found the account must be signed in again.
    func signInRequired(_ account: Account) async {
        guard let dispatcher, await monitor.shouldTellOfSignIn(account) else { return }
        dispatcher.send(
            AlertEvent(
                .signinRequired, account: account.name.rawValue,
                message: "\(account.name) must be signed in again: chappie accounts add \(account.name)"))
    }

    /// The daemon's auto-switch.
    func switched(from: Account, to: Account, reason: String) {
        dispatcher?.send(
            AlertEvent(.switched, account: to.name.rawValue, message: "switched from \(from.name) to \(to.name): \(reason)", from: from.name.rawValue)
        )
    }
}

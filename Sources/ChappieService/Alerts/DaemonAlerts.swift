import ChappieCore
import ChappieStore
import Foundation
import Logging

/// The daemon's alerts and banked resets: after each poll it made (on a team pool, only the
/// daemon that polled an account alerts for it), after a refresh that needs a sign-in, and after
/// an auto-switch. With `--auto-redeem`, an account that reaches its limit redeems one banked reset
/// credit, if it has one; nothing is ever redeemed otherwise.
struct DaemonAlerts: Sendable {
    let monitor: AlertMonitor
    /// `nil` when no target is configured: readings are still followed (for `--auto-redeem`).
    let dispatcher: AlertDispatcher?
    let credits: ResetCreditsService
    let autoRedeem: Bool
    let logger: Logger

    /// A reading this daemon polled.
    func polled(_ account: Account, _ snapshot: ChappieUsageLimitSnapshot) async {
        await monitor.usable(account)
        let observation = await monitor.observe(account, snapshot)
        for event in observation.events { dispatcher?.send(event) }
        guard let window = observation.reachedLimit.first, dispatcher != nil || autoRedeem else { return }
        let available: [ResetCreditsService.Credit]
        do {
            available = try await credits.list(account).filter { $0.isAvailable() }
        } catch {
            logger.info("cannot list reset credits", metadata: ["account": "\(account.name)", "error": "\(error)"])
            return
        }
        guard !available.isEmpty else { return }
        let binding = window == "5h" ? snapshot.shortWindow : snapshot.longWindow
        if dispatcher != nil, await monitor.shouldTellOfCredit(account, window: window) {
            dispatcher?.send(
                AlertEvent(
                    .creditAvailable, account: account.name.rawValue, window: window, usedPercent: binding?.usedPercent, resetsAt: binding?.resetsAt,
                    message:
                        "\(account.name) is at its limit and has \(available.count) banked reset credit\(available.count == 1 ? "" : "s"): chappie credits redeem \(account.name)"
                ))
        }
        guard autoRedeem else { return }
        do {
            let outcome = try await credits.redeem(account)
            logger.notice("redeemed a reset credit (--auto-redeem)", metadata: ["account": "\(account.name)", "outcome": "\(outcome.rawValue)"])
        } catch {
            logger.warning("redeeming a reset credit failed", metadata: ["account": "\(account.name)", "error": "\(error)"])
        }
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

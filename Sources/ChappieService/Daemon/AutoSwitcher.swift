import Chappie
import ChappieStore
import ChappieCore
import Foundation
import Logging

/// The daemon's auto-switch rule: when the active account reaches its limit (a reading at 100 % of
/// its binding window, or limit reached), once per such event, switch to the account with the most
/// headroom (``UsageService/best(maxAge:)``) and into the Codex home, if one is configured.
struct AutoSwitcher: Sendable {
    let store: any AccountStore
    let usage: UsageService
    let configuration: DaemonConfiguration
    let state: DaemonState
    let logger: Logger

    /// Once per limit event of the active account (a reading at 100 % or limit reached), switches to
    /// the best other account, exports it for Codex if configured, and logs the switch.
    func switchIfNeeded() async {
        do {
            guard let active = try await store.activeAccount(), let reading = try await store.latestUsage()[active.id] else { return }
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
            // The daemon writes only a home it was given or the one `switch` stored: never one it guessed.
            let configured = try await store.defaultCodexHome() != nil
            let codexHome: AccountsService.CodexHomeChoice = configuration.codexHome.map { .at($0) } ?? (configured ? .standard : .none)
            _ = try await AccountsService(store: store, signatures: usage.tokens.signatures).switchTo(choice.account.name, codexHome: codexHome)
            try await store.recordEvent(.autoSwitched, account: choice.account, detail: "from \(active.name) at its limit: \(choice.reason)")
            await state.switched()
            logger.notice("switched account", metadata: ["from": "\(active.name)", "to": "\(choice.account.name)", "reason": "\(choice.reason)"])
        } catch {
            logger.warning("auto-switch failed", metadata: ["error": "\(error)"])
        }
    }
}

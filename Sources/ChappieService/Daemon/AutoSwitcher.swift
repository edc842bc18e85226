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
    /// Alerts, when configured.
    var alerts: DaemonAlerts?

    /// The limit event `reading` shows for the active account: its binding window at 100 % or the
    /// limit reached, named by the account and the window's reset (a new window is a new event);
    /// `nil` while it has room.
    static func limitEvent(of active: Account, reading: UsageSample?) -> String? {
        guard let snapshot = reading?.snapshot, let binding = snapshot.bindingWindow, snapshot.limitReached || binding.usedPercent >= 100 else {
            return nil
        }
        return "\(active.id):\(Int(binding.resetsAt?.timeIntervalSince1970 ?? 0))"
    }

    /// Once per limit event of the active account (a reading at 100 % or limit reached), switches to
    /// the best other account, exports it for Codex if configured, and logs the switch.
    func switchIfNeeded() async {
        do {
            guard let active = try await store.activeAccount(),
                let event = Self.limitEvent(of: active, reading: try await store.latestUsage()[active.id]),
                await state.shouldActOnLimitEvent(event)
            else { return }
            let choice: UsageService.BestChoice
            do {
                // Work stays on work seats, a personal project on personal accounts, unless told otherwise.
                choice = try await usage.best(
                    maxAge: configuration.pollInterval, kind: configuration.autoSwitchAnyKind ? nil : WorkspaceKind(of: active))
            } catch {
                // Readings another process is polling right now may be older than the choice needs:
                // asked again after the next poll round, not only at the next limit event.
                await state.limitSwitchFailed(retryingAfter: configuration.pollInterval)
                logger.warning(
                    "active account is at its limit, and no other has room", metadata: ["account": "\(active.name)", "reason": "\(error)"])
                return
            }
            guard choice.account.id != active.id else { return }
            // The daemon writes only a home it was given or the one `switch` stored: never one it guessed.
            let configured = try await store.defaultCodexHome().map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) }
            let codexHome: AccountsService.CodexHomeChoice = (configuration.codexHome ?? configured).map { .at($0) } ?? .noHome
            let outcome: AccountsService.SwitchOutcome
            do {
                outcome = try await AccountsService(store: store, signatures: usage.tokens.signatures).switchTo(
                    choice.account.name, codexHome: codexHome)
            } catch {
                // Refused for now (a job still runs in the home): the same event is tried again.
                await state.limitSwitchFailed()
                throw error
            }
            if let imported = outcome.imported {
                logger.notice(
                    "imported the login the Codex home held before switching",
                    metadata: [
                        "account": "\(imported.name)", "codex_home": "\(outcome.codexAuthFile?.deletingLastPathComponent().path ?? "")",
                    ])
            }
            if !outcome.codexProcesses.isEmpty, let file = outcome.codexAuthFile {
                logger.warning(
                    "Codex is running in the home switched: it keeps the previous account's tokens until it exits, and stops at its next refresh; restart it",
                    metadata: [
                        "codex_home": "\(file.deletingLastPathComponent().path)", "pids": "\(outcome.codexProcesses)",
                        "from": "\(outcome.previousOwner.map(\.rawValue) ?? "-")",
                    ])
            }
            let running =
                outcome.codexProcesses.isEmpty
                ? "" : "; Codex running there (pid \(outcome.codexProcesses.map(String.init).joined(separator: ", "))) must be restarted"
            try await store.recordEvent(
                .autoSwitched, account: choice.account, detail: "from \(active.name) at its limit: \(choice.reason)\(running)")
            await state.switched()
            alerts?.switched(from: active, to: choice.account, reason: choice.reason)
            logger.notice("switched account", metadata: ["from": "\(active.name)", "to": "\(choice.account.name)", "reason": "\(choice.reason)"])
        } catch {
            logger.warning("auto-switch failed", metadata: ["error": "\(error)"])
        }
    }
}

import ChappieDaemonClient
import Chappie
import ChappieStore
import ChappieCore
import Foundation

/// The daemon's local API: what each request on its socket gets (docs/daemon.md). The socket
/// itself is ``DaemonSocketServer``'s.
struct DaemonAPI: Sendable {
    let store: any AccountStore
    let usage: UsageService
    let state: DaemonState
    let metrics: DaemonMetrics

    /// Answers one request from the socket.
    func answer(_ request: DaemonRequest) async -> DaemonReply {
        do {
            switch request.command {
            case "token":
                let name = try request.account.map { try AccountName($0) }
                let margin = Duration.seconds(request.marginSeconds ?? 300)
                let fresh = try await usage.tokens.token(for: name, margin: margin)
                return DaemonReply(ok: true, token: DaemonReply.Token(fresh))
            case "status":
                let accounts = try await store.accounts()
                let names = Dictionary(uniqueKeysWithValues: accounts.map { ($0.id, $0.name.rawValue) })
                let backingOff = await state.backingOff()
                return DaemonReply(
                    ok: true,
                    status: DaemonReply.Status(
                        pid: getpid(), startedAt: state.startedAt, lastRefreshAt: await state.lastRefreshAt, lastPollAt: await state.lastPollAt,
                        refreshes: await state.refreshes, refreshFailures: await state.refreshFailures, polls: await state.polls,
                        pollFailures: await state.pollFailures, switches: await state.switches,
                        backingOff: Dictionary(uniqueKeysWithValues: backingOff.compactMap { id, date in names[id].map { ($0, date) } }),
                        dashboard: await state.dashboard),
                    accounts: accounts)
            case "accounts":
                return DaemonReply(ok: true, accounts: try await store.accounts())
            case "usage":
                return DaemonReply(ok: true, accounts: try await store.accounts(), usage: try await store.latestUsage())
            case "metrics":
                return DaemonReply(ok: true, metrics: try await metrics.exposition())
            default:
                return .failure(
                    "unknown command \"\(request.command.prefix(40))\": use token, status, accounts, usage or metrics",
                    exitCode: ChappieExitCode.usage)
            }
        } catch {
            let failure =
                FailureDescription(error, account: request.account.flatMap { try? AccountName($0) })
                ?? FailureDescription(message: "\(error)", exitCode: ChappieExitCode.failure)
            return .failure(failure.message, exitCode: failure.exitCode)
        }
    }
}

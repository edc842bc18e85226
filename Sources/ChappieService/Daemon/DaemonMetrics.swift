import Chappie
import ChappieStore
import ChappieCore
import Foundation

/// The daemon's counters and each account's state in Prometheus' text exposition format.
struct DaemonMetrics: Sendable {
    let store: any AccountStore
    let state: DaemonState

    /// Prometheus text exposition of the counters and each account's state.
    func exposition() async throws -> String {
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
        let accounts = try await store.accounts()
        let latest = try await store.latestUsage()
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

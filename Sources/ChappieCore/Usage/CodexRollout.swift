public import Foundation

/// What chappie reads of the Codex CLI's own session logs, its rollouts
/// (`sessions/YYYY/MM/DD/rollout-TIME-ID.jsonl`, one JSON object a line): the rate limits Codex
/// last saw. After each turn Codex writes an `event_msg` whose payload is a `token_count`, with
/// `rate_limits` the way the service last sent them (its `codex.rate_limits` events and `x-codex-*`
/// headers): `{limit_id, primary: {used_percent, window_minutes, resets_at}, secondary,
/// plan_type, rate_limit_reached_type, credits}` (Codex 0.147 and 0.163; docs/protocol.md §6.5).
/// Read as they are written, they tell a limit Codex hit within seconds, without a poll.
package enum CodexRollout {
    /// The newest rate limits of the main limit (`codex`) in `lines` (a rollout's lines, oldest
    /// first), with the time Codex wrote them; `nil` when no line carries any. A line that is not JSON, or not such an event,
    /// is passed over: a rollout is another program's file, and the last line may be half written.
    package static func newestRateLimits(in lines: some Sequence<Substring>) -> (at: Date, snapshot: ChappieUsageLimitSnapshot)? {
        var newest: (at: Date, snapshot: ChappieUsageLimitSnapshot)?
        for line in lines {
            // Cheap before parsing: most lines are messages and tool output, often long.
            guard line.contains("\"token_count\""), line.contains("\"rate_limits\"") else { continue }
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any], object["type"] as? String == "event_msg",
                let payload = object["payload"] as? [String: Any], payload["type"] as? String == "token_count",
                let limits = payload["rate_limits"] as? [String: Any], let stamp = object["timestamp"] as? String,
                let at = WireNumber.date(iso8601: stamp),
                let snapshot = ChappieUsageLimitSnapshot.fromRolloutRateLimits(limits), snapshot.limitID == "codex"
            else { continue }
            if newest.map({ at >= $0.at }) ?? true { newest = (at, snapshot) }
        }
        return newest
    }
}

extension ChappieUsageLimitSnapshot {
    /// The snapshot of a rollout's `rate_limits` (Codex's `RateLimitSnapshot`): windows with
    /// `resets_at` in Unix seconds; `nil` without a readable window.
    package static func fromRolloutRateLimits(_ limits: [String: Any]) -> ChappieUsageLimitSnapshot? {
        let windows = ["primary", "secondary"].compactMap { key -> ChappieUsageWindow? in
            guard let window = limits[key] as? [String: Any], let used = WireNumber.percent(window["used_percent"]),
                (WireNumber.double(window["used_percent"]) ?? 0) >= 0
            else { return nil }
            return ChappieUsageWindow(
                usedPercent: used, windowMinutes: WireNumber.integer(window["window_minutes"], in: 1...WireNumber.longestSeconds / 60),
                resetsAt: WireNumber.date(window["resets_at"] ?? window["reset_at"]))
        }
        guard !windows.isEmpty else { return nil }
        let id = (limits["limit_id"] as? String ?? "codex").lowercased().replacingOccurrences(of: "-", with: "_")
        var snapshot = ChappieUsageLimitSnapshot(
            limitID: id, limitName: limits["limit_name"] as? String, plan: (limits["plan_type"] as? String).map(ChappiePlan.init(rawValue:)),
            shortWindow: nil, longWindow: nil)
        snapshot.place(windows)
        let reached = limits["rate_limit_reached_type"] as? String
        snapshot.rateLimitReachedType = reached
        snapshot.limitReached = reached != nil || windows.contains { $0.usedPercent >= 100 }
        if let credits = limits["credits"] as? [String: Any] {
            snapshot.credits = ChappieCredits(
                hasCredits: credits["has_credits"] as? Bool ?? false, unlimited: credits["unlimited"] as? Bool ?? false,
                balance: credits["balance"] as? String)
        }
        return snapshot
    }
}

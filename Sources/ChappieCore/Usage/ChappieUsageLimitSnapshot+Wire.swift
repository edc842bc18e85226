import Foundation

extension ChappieUsageLimitSnapshot {
    /// The main (`codex`) limit from a response's `x-codex-*` rate-limit headers (§6.2), or `nil`
    /// when no window is present. `header` looks a header up case-insensitively.
    package static func fromHeaders(_ header: (String) -> String?) -> ChappieUsageLimitSnapshot? {
        func window(_ slot: String) -> ChappieUsageWindow? {
            guard let used = header("x-codex-\(slot)-used-percent").flatMap(Double.init).flatMap(WireNumber.percent) else { return nil }
            let minutes = header("x-codex-\(slot)-window-minutes").flatMap(Double.init)
                .flatMap { WireNumber.integer($0, in: 1...WireNumber.longestSeconds / 60) }
            let reset = header("x-codex-\(slot)-reset-at").flatMap(Double.init).flatMap(WireNumber.date(unixSeconds:))
            // Present only if used ≠ 0, the window has a length, or a reset time is given.
            guard used != 0 || (minutes ?? 0) != 0 || reset != nil else { return nil }
            return ChappieUsageWindow(usedPercent: used, windowMinutes: minutes, resetsAt: reset)
        }
        func flag(_ name: String) -> Bool? {
            header(name).map { ["true", "1"].contains($0.lowercased()) }
        }
        let windows = [window("primary"), window("secondary")].compactMap { $0 }
        guard !windows.isEmpty else { return nil }
        var snapshot = ChappieUsageLimitSnapshot(
            limitID: "codex", plan: header("x-codex-plan-type").map(ChappiePlan.init(rawValue:)), shortWindow: nil, longWindow: nil)
        snapshot.place(windows)
        if let hasCredits = flag("x-codex-credits-has-credits") {
            snapshot.credits = ChappieCredits(
                hasCredits: hasCredits, unlimited: flag("x-codex-credits-unlimited") ?? false, balance: header("x-codex-credits-balance"))
        }
        snapshot.limitReached = windows.contains { $0.usedPercent >= 100 }
        return snapshot
    }

    /// A `codex.rate_limits` stream event's limit (§6.3), or `nil` when it has no window.
    package static func fromRateLimitsEvent(_ event: [String: Any]) -> ChappieUsageLimitSnapshot? {
        let limits = event["rate_limits"] as? [String: Any] ?? [:]
        let windows = ["primary", "secondary"].compactMap { key -> ChappieUsageWindow? in
            guard let window = limits[key] as? [String: Any], let used = WireNumber.percent(window["used_percent"]) else { return nil }
            return ChappieUsageWindow(
                usedPercent: used, windowMinutes: WireNumber.integer(window["window_minutes"], in: 1...WireNumber.longestSeconds / 60),
                resetsAt: WireNumber.date(window["reset_at"]))
        }
        guard !windows.isEmpty else { return nil }
        let id = (event["metered_limit_name"] as? String ?? event["limit_name"] as? String ?? "codex")
            .lowercased().replacingOccurrences(of: "-", with: "_")
        var snapshot = ChappieUsageLimitSnapshot(
            limitID: id, plan: (event["plan_type"] as? String).map(ChappiePlan.init(rawValue:)), shortWindow: nil, longWindow: nil)
        snapshot.place(windows)
        if let credits = event["credits"] as? [String: Any] {
            snapshot.credits = ChappieCredits(
                hasCredits: credits["has_credits"] as? Bool ?? false, unlimited: credits["unlimited"] as? Bool ?? false,
                balance: credits["balance"] as? String)
        }
        snapshot.limitReached = limits["limit_reached"] as? Bool ?? windows.contains { $0.usedPercent >= 100 }
        return snapshot
    }

    /// Puts windows in the short or long slot by their length.
    mutating func place(_ windows: [ChappieUsageWindow]) {
        for window in windows {
            switch window.kind {
            case .fiveHour, .short:
                if shortWindow == nil { shortWindow = window } else if longWindow == nil { longWindow = window }
            case .weekly, .long:
                if longWindow == nil { longWindow = window } else if shortWindow == nil { shortWindow = window }
            }
        }
    }
}

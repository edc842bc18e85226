import ChappieSystem
import ChappieText
public import Foundation

/// One usage-limit window as the service reports it.
public struct ChappieUsageWindow: Sendable, Hashable, Codable {
    /// How much of the window is used, 0–100.
    public var usedPercent: Double
    /// The window's length in minutes (300 for 5 hours, 10080 for a week), when known.
    public var windowMinutes: Int?
    /// When the window starts afresh.
    public var resetsAt: Date?

    /// Creates a window. The percentage is clamped to 0–100, so that a value read back from an
    /// older store or from a caller cannot break arithmetic on it.
    public init(usedPercent: Double, windowMinutes: Int?, resetsAt: Date?) {
        self.usedPercent = WireNumber.percent(usedPercent) ?? (usedPercent > 0 ? 100 : 0)
        self.windowMinutes = windowMinutes
        self.resetsAt = resetsAt
    }

    /// Decodes a window through ``init(usedPercent:windowMinutes:resetsAt:)``, which clamps it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            usedPercent: try container.decode(Double.self, forKey: .usedPercent),
            windowMinutes: try container.decodeIfPresent(Int.self, forKey: .windowMinutes),
            resetsAt: try container.decodeIfPresent(Date.self, forKey: .resetsAt))
    }

    private enum CodingKeys: String, CodingKey {
        case usedPercent, windowMinutes, resetsAt
    }

    /// What kind of window this is, by its length (never by its slot in the reply).
    public var kind: Kind {
        switch windowMinutes {
        case 300?: .fiveHour
        case 10080?: .weekly
        case let minutes? where minutes < 24 * 60: .short
        default: .long
        }
    }

    /// Windows by length.
    public enum Kind: String, Sendable, Codable {
        /// The 5-hour window.
        case fiveHour = "5h"
        /// The weekly window.
        case weekly
        /// Another window shorter than a day.
        case short
        /// Another window of a day or more (or of unknown length).
        case long

        /// The window named for people: "5-hour" for a short one, "weekly" for a long one.
        public var label: String { self == .fiveHour || self == .short ? "5-hour" : "weekly" }
    }
}

/// Credits that can be spent once a limit is reached.
public struct ChappieCredits: Sendable, Hashable, Codable {
    /// Whether the account has credits.
    public var hasCredits: Bool
    /// Whether they are unlimited.
    public var unlimited: Bool
    /// The balance as the service writes it (a string such as `"9.99"`).
    public var balance: String?

    /// Creates credits.
    public init(hasCredits: Bool, unlimited: Bool, balance: String?) {
        self.hasCredits = hasCredits
        self.unlimited = unlimited
        self.balance = balance
    }
}

/// An account's usage limits at one moment: the SDK's view of `GET /backend-api/wham/usage`, the
/// rate-limit headers and `codex.rate_limits` events (docs/protocol.md §6).
///
/// Windows are sorted by length: ``shortWindow`` is the 5-hour one and ``longWindow`` the weekly one,
/// whichever slot the service put them in (some plans send only a weekly window, in
/// `primary_window`).
public struct ChappieUsageLimitSnapshot: Sendable, Hashable, Codable {
    /// `codex` for the main limit, else the metered feature (such as `codex_bengalfox`).
    public var limitID: String
    /// A human-readable name of the limit, when the service gives one.
    public var limitName: String?
    /// The plan, as the service names it (unknown names are kept).
    public var plan: ChappiePlan?
    /// The window shorter than a day (the 5-hour window), if reported.
    public var shortWindow: ChappieUsageWindow?
    /// The window of a day or more (the weekly window), if reported.
    public var longWindow: ChappieUsageWindow?
    /// Credits, if reported.
    public var credits: ChappieCredits?
    /// Whether the service says the limit is reached.
    public var limitReached: Bool
    /// Why, when it is (`rate_limit_reached`, `workspace_member_credits_depleted`, …).
    public var rateLimitReachedType: String?

    /// Creates a snapshot.
    public init(
        limitID: String, limitName: String? = nil, plan: ChappiePlan?, shortWindow: ChappieUsageWindow?, longWindow: ChappieUsageWindow?,
        credits: ChappieCredits? = nil, limitReached: Bool = false, rateLimitReachedType: String? = nil
    ) {
        self.limitID = limitID
        self.limitName = limitName
        self.plan = plan
        self.shortWindow = shortWindow
        self.longWindow = longWindow
        self.credits = credits
        self.limitReached = limitReached
        self.rateLimitReachedType = rateLimitReachedType
    }

    /// The primary window, as the service and the seeds name it: the 5-hour window, or the weekly
    /// one for a plan that has no 5-hour window (the service then sends its week as primary).
    public var primary: ChappieUsageWindow? { shortWindow ?? longWindow }

    /// The secondary window: the weekly one when a 5-hour window is the primary, else none.
    public var secondary: ChappieUsageWindow? { shortWindow == nil ? nil : longWindow }

    /// The window that limits first: the more used of the two (ties: the one that resets later).
    public var bindingWindow: ChappieUsageWindow? {
        switch (shortWindow, longWindow) {
        case (let short?, let long?):
            let fiveHourBinds = HeadroomRule.fiveHourBinds(
                fiveHourUsed: short.usedPercent, fiveHourResetsAt: short.resetsAt?.timeIntervalSince1970, weeklyUsed: long.usedPercent,
                weeklyResetsAt: long.resetsAt?.timeIntervalSince1970)
            return fiveHourBinds ? short : long
        case (let short?, nil): return short
        case (nil, let long?): return long
        case (nil, nil): return nil
        }
    }

    /// Decodes a `wham/usage` reply (`RateLimitStatusPayload`) leniently: every field is optional,
    /// unknown fields are ignored. Returns the main limit (`codex`) first, then each additional one.
    ///
    /// - Throws: ``UsageDecodingError`` when the body is not a JSON object, or a window of the main
    ///   limit is there but its `used_percent` is not a number: an unreadable window is unknown,
    ///   never room. An additional limit's unreadable window is left out.
    public static func decodeUsage(_ body: Data) throws(UsageDecodingError) -> [ChappieUsageLimitSnapshot] {
        // A key twice is read as its last value by JSONSerialization: which one the service meant
        // cannot be known (the strict reader refuses it).
        guard JSONValue.parse(body) != nil, let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
            throw .notJSONObject
        }
        let plan = (object["plan_type"] as? String).map(ChappiePlan.init(rawValue:))
        let reachedType = (object["rate_limit_reached_type"] as? [String: Any])?["type"] as? String
        let credits = (object["credits"] as? [String: Any]).map { credits in
            ChappieCredits(
                hasCredits: credits["has_credits"] as? Bool ?? false, unlimited: credits["unlimited"] as? Bool ?? false,
                balance: credits["balance"] as? String ?? (credits["balance"] as? NSNumber).map { "\($0)" })
        }
        var snapshots = [
            try snapshot(
                limitID: "codex", name: nil, plan: plan, rateLimit: object["rate_limit"] as? [String: Any],
                credits: credits, reachedType: reachedType, strict: true)
        ]
        for extra in object["additional_rate_limits"] as? [[String: Any]] ?? [] {
            let id = (extra["metered_feature"] as? String ?? extra["limit_name"] as? String ?? "other")
                .lowercased().replacingOccurrences(of: "-", with: "_")
            snapshots.append(
                try snapshot(
                    limitID: id, name: extra["limit_name"] as? String, plan: plan, rateLimit: extra["rate_limit"] as? [String: Any],
                    credits: nil, reachedType: nil, strict: false))
        }
        return snapshots
    }

    /// One limit's snapshot. `strict`: a window that is there but unreadable fails the reply (the
    /// main limit, which `guard` and switching judge by); otherwise it is left out (an extra
    /// limit's, which must not fail every poll).
    private static func snapshot(
        limitID: String, name: String?, plan: ChappiePlan?, rateLimit: [String: Any]?, credits: ChappieCredits?, reachedType: String?,
        strict: Bool
    ) throws(UsageDecodingError) -> ChappieUsageLimitSnapshot {
        var windows: [ChappieUsageWindow] = []
        for key in ["primary_window", "secondary_window"] {
            // Numbers out of range never crash or reach the store: the percentage is clamped to
            // 0–100, a length or time that cannot be is unknown (WireNumber).
            guard let value = rateLimit?[key], !(value is NSNull) else { continue }
            // Below 0 is no percentage: how full the window is cannot be known (above 100 is full).
            guard let window = value as? [String: Any], let used = WireNumber.percent(window["used_percent"]),
                (WireNumber.double(window["used_percent"]) ?? 0) >= 0
            else {
                if strict { throw .unreadableWindow(key) }
                continue
            }
            // window_minutes = ceil(limit_window_seconds / 60), unset when ≤ 0 (§6.1).
            let minutes = WireNumber.integer(window["limit_window_seconds"], in: 1...WireNumber.longestSeconds).map { ($0 + 59) / 60 }
            windows.append(ChappieUsageWindow(usedPercent: used, windowMinutes: minutes, resetsAt: WireNumber.date(window["reset_at"])))
        }
        var snapshot = ChappieUsageLimitSnapshot(
            limitID: limitID, limitName: name, plan: plan, shortWindow: nil, longWindow: nil, credits: credits,
            limitReached: rateLimit?["limit_reached"] as? Bool ?? false, rateLimitReachedType: reachedType)
        for window in windows {
            switch window.kind {
            case .fiveHour, .short:
                if snapshot.shortWindow == nil { snapshot.shortWindow = window } else { snapshot.longWindow = snapshot.longWindow ?? window }
            case .weekly, .long:
                if snapshot.longWindow == nil { snapshot.longWindow = window } else { snapshot.shortWindow = snapshot.shortWindow ?? window }
            }
        }
        return snapshot
    }
}

/// A usage reply could not be read.
public enum UsageDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The body is not a JSON object.
    case notJSONObject
    /// A window (`primary_window`, `secondary_window`) is there, but not an object with a numeric
    /// `used_percent`: how full it is cannot be known.
    case unreadableWindow(String)

    /// What is wrong.
    public var description: String {
        switch self {
        case .notJSONObject: "the usage reply is not one JSON object (or names a key twice)"
        case .unreadableWindow(let key): "the usage reply's \(key) has no used_percent of 0 or more"
        }
    }
}

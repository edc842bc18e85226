/// A ChatGPT account as the emulator knows it, with its usage windows.
struct EmulatedAccount: Sendable {
    /// A usage-limit window: how much is used and when it starts afresh.
    struct Window: Sendable {
        var usedPercent: Double
        var seconds: Int
        var resetAt: Int

        /// Starts the window afresh once its reset time has passed.
        mutating func roll(now: Int) {
            if now >= resetAt {
                usedPercent = 0
                resetAt = now + seconds
            }
        }
    }

    var accountID: String
    var userID: String
    var email: String
    var plan: String
    var isFedRAMP: Bool
    /// `false` makes /responses answer 429 `usage_not_included`.
    var codexIncluded: Bool
    var fiveHour: Window
    var weekly: Window
    /// Workspace routing (`wham/accounts/check`): `NO_CONSTRAINT`, `us` or `us_cr`.
    var routingOverride = "NO_CONSTRAINT"
    /// The origin its Responses requests go to (`wham/accounts/check`); `nil` for the emulator's own.
    var workspaceOrigin: String?
    /// Turns it may still have before its 5-hour window fills (`limit_after_turns`); `nil`: no such cap.
    var turnsBeforeLimit: Int?
    /// Banked rate-limit reset credits (`wham/rate-limit-reset-credits`), oldest first.
    var resetCredits: [ResetCredit] = []

    /// One banked reset: it empties both windows once, when redeemed while one is full.
    struct ResetCredit: Sendable {
        var id: String
        var grantedAt: Int
        var expiresAt: Int
        /// `available` or `redeemed`.
        var status = "available"
    }

    /// Whether either window is full.
    var limitReached: Bool { fiveHour.usedPercent >= 100 || weekly.usedPercent >= 100 }

    /// The window that is full, soonest to reset first, if any.
    var reachedWindow: Window? {
        [fiveHour, weekly].filter { $0.usedPercent >= 100 }.min { $0.resetAt < $1.resetAt }
    }

    /// The plans whose usage reply carries only the weekly window, in `primary_window` (§6.1).
    var hasWeeklyOnly: Bool { plan == "free" }
}

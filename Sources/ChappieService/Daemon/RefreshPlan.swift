import ChappieCore
import Foundation

/// When the daemon refreshes each account: at its token's `exp` minus the margin and a jitter of
/// its own (8 days after its last refresh when the token has no readable `exp`), not before its
/// backoff ends, and not within 5 s of the last look at it. A value, so that the rule is tested on
/// times a test chooses, as ``PollPlan`` is.
struct RefreshPlan: Sendable {
    /// How long before `exp` a token is refreshed.
    var margin: Duration
    /// The longest the loop sleeps before it looks at the accounts again.
    var rescanInterval: Duration

    /// Up to 30 s more than the margin, fixed per account, so that accounts do not all refresh at once.
    func jitter(for account: Account) -> Int64 {
        Int64(account.id.magnitude % 31)
    }

    /// When an account's token is due, by its own times alone.
    func refreshTime(for account: Account) -> Date {
        let lead = Double(margin.components.seconds + jitter(for: account))
        if let expiry = account.accessTokenExpiresAt { return expiry.addingTimeInterval(-lead) }
        return (account.lastRefreshAt ?? .distantPast).addingTimeInterval(8 * 86400 - lead)
    }

    /// The accounts due at `now`, and when to look next: the earliest time another comes due, at
    /// most the rescan interval away.
    ///
    /// - Parameters:
    ///   - backoffUntil: The accounts waiting after a failure, and until when.
    ///   - lastAttempts: When the loop last looked at each account.
    func due(_ accounts: [Account], backoffUntil: [Int64: Date], lastAttempts: [Int64: Date], now: Date) -> (due: [Account], next: Date) {
        var due: [Account] = []
        var next = now.addingTimeInterval(Double(rescanInterval.components.seconds))
        for account in accounts where account.status == .ok {
            var when = refreshTime(for: account)
            if let until = backoffUntil[account.id] { when = max(when, until) }
            // Never look at the same account twice within a few seconds, whatever its token says.
            if let last = lastAttempts[account.id] { when = max(when, last.addingTimeInterval(5)) }
            if when <= now { due.append(account) } else { next = min(next, when) }
        }
        return (due, next)
    }
}

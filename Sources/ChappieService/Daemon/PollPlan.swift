import ChappieCore
import Foundation

/// When the daemon polls each account's usage: on the poll interval, and more often once the
/// account nears its limit, so that a switch away from a full account comes within about a minute
/// rather than a whole interval. Readings any chappie process stored count: an account polled by
/// `chappie usage poll`, or by another machine's daemon on a team pool, is not due again at once.
struct PollPlan: Sendable {
    /// How long a reading stays fresh.
    var interval: Duration
    /// How long a reading stays fresh once its binding window is at `nearLimitPercent` or more.
    var nearLimitInterval: Duration
    /// The use (percent of the binding window) from which `nearLimitInterval` applies.
    var nearLimitPercent: Double

    /// How long `reading` stays fresh: the near-limit interval from `nearLimitPercent` on, full
    /// accounts included (a limit reached is what auto-switch and alerts wait for, and a reading
    /// that says so late makes Codex stand still), or until a full window resets if sooner.
    func freshness(of reading: UsageSample) -> TimeInterval {
        let binding = reading.snapshot.bindingWindow
        let used = binding?.usedPercent ?? 0
        let near = min(nearLimitInterval, interval).inSeconds
        if reading.snapshot.limitReached || used >= 100 {
            let untilReset = binding?.resetsAt.map { max(0, $0.timeIntervalSince(reading.observedAt)) } ?? .infinity
            return min(near, untilReset)
        }
        return used >= nearLimitPercent ? near : interval.inSeconds
    }

    /// The accounts due at `now`: those without a reading, or whose latest reading is no longer fresh.
    func due(_ accounts: [Account], latest: [Int64: UsageSample], now: Date) -> [Account] {
        accounts.filter { account in
            guard let reading = latest[account.id] else { return true }
            return reading.age(at: now) >= freshness(of: reading)
        }
    }
}

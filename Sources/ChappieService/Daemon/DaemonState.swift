import Foundation

/// What the daemon has done and what it waits for: counters, per-account backoff, the last limit
/// event it switched on.
actor DaemonState {
    let startedAt: Date
    private(set) var lastRefreshAt: Date?
    private(set) var lastPollAt: Date?
    /// When the daemon last polled at all, whether or not the service answered.
    private(set) var lastPollAttemptAt: Date?
    private(set) var refreshes = 0, refreshFailures = 0, polls = 0, pollFailures = 0, switches = 0
    /// Failures in a row and when to try again, per account row id.
    private var backoff: [Int64: (failures: Int, until: Date)] = [:]
    /// When each account was last looked at by the refresher.
    private var attempts: [Int64: Date] = [:]
    /// The limit event (account and window reset) the daemon last switched away from.
    private var lastLimitEvent: String?
    /// When to try the switch for `lastLimitEvent` again, after it failed (a job held the home).
    private var limitRetryAt: Date?
    /// The newest reading of each account that alerts looked at.
    private var alertedThrough: [Int64: Date] = [:]
    private let initialBackoff: Double
    private let maximumBackoff: Double
    /// The same events as Prometheus counters, with their outcome or reason.
    private let counters: DaemonCounters
    /// Where the dashboard is served (`http://ADDRESS/`), once it listens.
    private(set) var dashboard: String?
    /// The time now: the system's, or a test's that moves when the test says. Backoff and retry
    /// times are shown to people (`status`, the dashboard), so they are wall-clock dates.
    private let now: @Sendable () -> Date

    init(
        initialBackoff: Duration, maximumBackoff: Duration, startedAt: Date, counters: DaemonCounters,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.startedAt = startedAt
        self.counters = counters
        self.now = now
        self.initialBackoff = max(0.1, Double(initialBackoff.components.seconds) + Double(initialBackoff.components.attoseconds) / 1e18)
        self.maximumBackoff = Double(maximumBackoff.components.seconds)
    }

    /// Records where the dashboard listens.
    func served(at url: String) {
        dashboard = url
    }

    func attempted(_ id: Int64) {
        attempts[id] = now()
    }

    /// When the refresher last looked at each account, for those it looked at within the last minute.
    func recentAttempts() -> [Int64: Date] {
        attempts.filter { now().timeIntervalSince($0.value) < 60 }
    }

    /// A refresh by the refresh loop that got fresh tokens (its metrics are counted by the refresher's events).
    func refreshed(_ id: Int64) {
        refreshes += 1
        lastRefreshAt = now()
        backoff[id] = nil
    }

    func attemptedPolls() {
        lastPollAttemptAt = now()
    }

    func polled(_ id: Int64) {
        counters.polled()
        polls += 1
        lastPollAt = now()
        backoff[id] = nil
    }

    /// Records a failure; returns when to try the account again (the initial wait, doubling, at most the maximum, ±10 %).
    @discardableResult
    func failed(_ id: Int64, refresh: Bool, error: any Error) -> Date {
        if refresh {
            refreshFailures += 1
            counters.refreshFailed(error)
        } else {
            pollFailures += 1
            counters.pollFailed(error)
        }
        let failures = (backoff[id]?.failures ?? 0) + 1
        let delay = min(maximumBackoff, initialBackoff * pow(2, Double(failures - 1))) * Double.random(in: 0.9...1.1)
        let until = now().addingTimeInterval(delay)
        backoff[id] = (failures, until)
        return until
    }

    func backoffUntil(_ id: Int64) -> Date? {
        guard let entry = backoff[id], entry.until > now() else { return nil }
        return entry.until
    }

    func backingOff() -> [Int64: Date] {
        backoff.filter { $0.value.until > now() }.mapValues(\.until)
    }

    /// Whether to act on this limit event: a new one (then it is remembered), or one whose switch
    /// failed a minute ago or more.
    func shouldActOnLimitEvent(_ key: String) -> Bool {
        if key == lastLimitEvent {
            guard let retry = limitRetryAt, now() >= retry else { return false }
        }
        lastLimitEvent = key
        limitRetryAt = nil
        return true
    }

    /// Whether a reading of the account at `observedAt` is newer than the last one alerts looked
    /// at; it is then the last one.
    func isNewForAlerts(_ id: Int64, observedAt: Date) -> Bool {
        guard observedAt > (alertedThrough[id] ?? .distantPast) else { return false }
        alertedThrough[id] = observedAt
        return true
    }

    /// The switch for the current limit event failed: it is tried again after `delay` (a minute
    /// by default), not at once.
    func limitSwitchFailed(retryingAfter delay: Duration = .seconds(60)) {
        limitRetryAt = now().addingTimeInterval(Double(delay.components.seconds))
    }

    func switched() {
        counters.switched()
        switches += 1
    }
}

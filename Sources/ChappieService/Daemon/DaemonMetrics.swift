import Chappie
import ChappieNet
import ChappieCore
import ChappieStore
import CoreMetrics
import Foundation
import Prometheus

/// The daemon's metrics, kept with swift-metrics and exposed in Prometheus' text format by
/// swift-prometheus. Counters are incremented as things happen (``DaemonCounters``); each account's
/// gauges are set from the store on every scrape, and an account's series go when it does.
///
/// No e-mail, token or id is ever a label: accounts are named by their chappie name.
actor DaemonMetrics {
    /// Every metric's name and help text.
    enum Name: String, CaseIterable {
        case refreshes = "chappie_refreshes_total"
        case refreshFailures = "chappie_refresh_failures_total"
        case polls = "chappie_polls_total"
        case pollFailures = "chappie_poll_failures_total"
        case reuseDetections = "chappie_reuse_detections_total"
        case switches = "chappie_switches_total"
        case uptime = "chappie_uptime_seconds"
        case usedPercent = "chappie_account_used_percent"
        case secondsToReset = "chappie_account_seconds_to_reset"
        case tokenSecondsToExpiry = "chappie_account_token_seconds_to_expiry"
        case accountOK = "chappie_account_ok"
        case alertDeliveries = "chappie_alerts_total"

        var help: String {
            switch self {
            case .refreshes:
                "Token refreshes that succeeded, by outcome (refreshed at the issuer, or newer tokens adopted from Codex or another process)."
            case .refreshFailures: "Token refreshes of the refresh loop that failed, by reason (sign_in_required, transient, permanent)."
            case .polls: "Usage polls that succeeded."
            case .pollFailures: "Usage polls that failed, by reason (sign_in_required, transient, permanent)."
            case .reuseDetections: "Refreshes the issuer refused as already redeemed (refresh_token_reused)."
            case .switches: "Automatic account switches."
            case .uptime: "Seconds since the daemon started."
            case .usedPercent: "Used percent of each usage window, from the latest reading."
            case .secondsToReset: "Seconds until each usage window resets, from the latest reading (0 once passed)."
            case .tokenSecondsToExpiry: "Seconds until the stored access token expires (negative once expired)."
            case .accountOK: "Whether the account is usable (1) or needs attention (0)."
            case .alertDeliveries: "Alert deliveries that ended, by target (webhook, command) and outcome (delivered, failed after its retries)."
            }
        }
    }

    /// The registry the exposition is written from; one per daemon.
    let registry = PrometheusCollectorRegistry()
    /// The swift-metrics factory over the registry, with each metric's help text.
    private let factory: DescribedPrometheusFactory
    /// The counters the daemon's parts increment.
    nonisolated let counters: DaemonCounters
    private let store: any AccountDirectoryReader & UsageLog
    private let startedAt: Date
    private let uptime: Meter
    /// Each account's gauges, by name and labels, as set at the last scrape.
    private var accountGauges: [String: Meter] = [:]

    init(store: any AccountDirectoryReader & UsageLog, startedAt: Date) {
        self.store = store
        self.startedAt = startedAt
        factory = DescribedPrometheusFactory(registry: registry, help: Dictionary(uniqueKeysWithValues: Name.allCases.map { ($0.rawValue, $0.help) }))
        counters = DaemonCounters(factory: factory)
        uptime = Meter(label: Name.uptime.rawValue, dimensions: [], factory: factory)
    }

    /// Prometheus text exposition (format 0.0.4) of the counters and each account's state now.
    func exposition(now: Date = Date()) async throws -> String {
        uptime.set(now.timeIntervalSince(startedAt).rounded(.down))
        let accounts = try await store.accounts()
        let latest = try await store.latestUsage()
        var values: [String: (name: Name, dimensions: [(String, String)], value: Double)] = [:]
        func set(_ name: Name, _ dimensions: [(String, String)], _ value: Double) {
            let key = ([name.rawValue] + dimensions.map { "\($0.0)=\($0.1)" }).joined(separator: "\u{0}")
            values[key] = (name, dimensions, value)
        }
        for account in accounts {
            let label = ("account", account.name.rawValue)
            if let snapshot = latest[account.id]?.snapshot {
                for (window, reading) in [("5h", snapshot.shortWindow), ("weekly", snapshot.longWindow)] {
                    guard let reading else { continue }
                    set(.usedPercent, [label, ("window", window)], reading.usedPercent)
                    if let reset = reading.resetsAt {
                        set(.secondsToReset, [label, ("window", window)], max(0, reset.timeIntervalSince(now)).rounded(.down))
                    }
                }
            }
            if let expiry = account.accessTokenExpiresAt {
                set(.tokenSecondsToExpiry, [label], expiry.timeIntervalSince(now).rounded(.down))
            }
            set(.accountOK, [label], account.status == .ok ? 1 : 0)
        }
        // An account removed or renamed since the last scrape loses its series.
        for (key, meter) in accountGauges where values[key] == nil {
            meter.destroy()
            accountGauges[key] = nil
        }
        for (key, entry) in values {
            let meter = accountGauges[key] ?? Meter(label: entry.name.rawValue, dimensions: entry.dimensions, factory: factory)
            accountGauges[key] = meter
            meter.set(entry.value)
        }
        return registry.emitToString()
    }
}

/// The daemon's counters, as swift-metrics counters with the Prometheus factory. Every label value
/// a counter can take is made at start, so that each series is there (at 0) from the first scrape.
struct DaemonCounters: Sendable {
    /// Why a refresh or poll failed, from the exit code the error would give a command.
    enum FailureReason: String, CaseIterable, Sendable {
        case signInRequired = "sign_in_required"
        case transient
        case permanent

        /// The reason for an error: sign-in, retry, or anything else (``FailureDescription`` is the
        /// one mapping from errors to what to do; a network error below it says for itself).
        init(_ error: any Error) {
            if let error = error as? ChappieHTTPClientError {
                self = error.isTransient ? .transient : .permanent
                return
            }
            switch FailureDescription(error)?.exitCode {
            case ChappieExitCode.signInRequired?: self = .signInRequired
            case ChappieExitCode.temporaryFailure?: self = .transient
            default: self = .permanent
            }
        }
    }

    private let redeemed: CoreMetrics.Counter
    private let adopted: CoreMetrics.Counter
    private let refreshFailures: [FailureReason: CoreMetrics.Counter]
    private let polls: CoreMetrics.Counter
    private let pollFailures: [FailureReason: CoreMetrics.Counter]
    private let reuseDetections: CoreMetrics.Counter
    private let switches: CoreMetrics.Counter
    private let alertDeliveries: [String: CoreMetrics.Counter]

    /// Counters that count nowhere (rules tested without a metrics backend).
    static var discarding: DaemonCounters { DaemonCounters(factory: NOOPMetricsHandler.instance) }

    init(factory: any MetricsFactory) {
        func counter(_ name: DaemonMetrics.Name, _ dimensions: [(String, String)] = []) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: name.rawValue, dimensions: dimensions, factory: factory)
        }
        redeemed = counter(.refreshes, [("outcome", "refreshed")])
        adopted = counter(.refreshes, [("outcome", "adopted")])
        refreshFailures = Dictionary(uniqueKeysWithValues: FailureReason.allCases.map { ($0, counter(.refreshFailures, [("reason", $0.rawValue)])) })
        polls = counter(.polls)
        pollFailures = Dictionary(uniqueKeysWithValues: FailureReason.allCases.map { ($0, counter(.pollFailures, [("reason", $0.rawValue)])) })
        reuseDetections = counter(.reuseDetections)
        switches = counter(.switches)
        var deliveries: [String: CoreMetrics.Counter] = [:]
        for target in ["webhook", "command"] {
            for outcome in [AlertDispatcher.Outcome.delivered, .failed] {
                deliveries["\(target) \(outcome.rawValue)"] = counter(.alertDeliveries, [("target", target), ("outcome", outcome.rawValue)])
            }
        }
        alertDeliveries = deliveries
    }

    /// An alert delivery that ended.
    @Sendable func alertDelivered(_ target: String, _ outcome: AlertDispatcher.Outcome) {
        alertDeliveries["\(target) \(outcome.rawValue)"]?.increment()
    }

    /// What a refresher did, in the refresh loop or in a poll: redeemed or adopted tokens count as
    /// refreshes by outcome; the issuer's `refresh_token_reused` as a reuse detection.
    @Sendable func record(_ event: TokenRefresher.Event) {
        switch event {
        case .redeemed: redeemed.increment()
        case .adopted: adopted.increment()
        case .refused(let code): if code == OAuthErrorCode.refreshTokenReused { reuseDetections.increment() }
        }
    }

    /// A refresh that failed.
    func refreshFailed(_ error: any Error) {
        refreshFailures[FailureReason(error)]?.increment()
    }

    /// A usage poll that succeeded.
    func polled() {
        polls.increment()
    }

    /// A usage poll that failed.
    func pollFailed(_ error: any Error) {
        pollFailures[FailureReason(error)]?.increment()
    }

    /// The daemon switched the active account.
    func switched() {
        switches.increment()
    }
}

/// swift-prometheus' factory for swift-metrics, with help text: each metric made through it is
/// registered with the `# HELP` line its name has in `help`. Meters and non-aggregating recorders
/// are gauges, aggregating recorders value histograms, timers duration histograms.
struct DescribedPrometheusFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    let help: [String: String]

    /// The full name as given, with its help text.
    private func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: help[label] ?? "")
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(descriptor: descriptor(label), labels: dimensions, buckets: [1, 5, 10, 25, 50, 75, 90, 95, 100])
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(
            descriptor: descriptor(label), labels: dimensions,
            buckets: [.milliseconds(50), .milliseconds(250), .seconds(1), .seconds(5), .seconds(30)])
    }

    func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}

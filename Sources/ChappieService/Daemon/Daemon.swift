package import Chappie
import ChappieCore
import ChappieNet
package import ChappieStore
import ChappieVault
import Foundation
package import Logging
public import ServiceLifecycle

/// `chappie daemon`, wiring its parts: the scheduler (``DaemonScheduler``: refresh and poll
/// timing), the switcher (``AutoSwitcher``), the socket server (``DaemonSocketServer`` answering with
/// ``DaemonAPI``) and the metrics (``DaemonMetrics``). It keeps every account's tokens fresh
/// (scheduled from each token's `exp`), polls usage on an interval, optionally switches away from
/// an account that hit its limit, and answers a local API on a Unix socket. SIGTERM/SIGINT (through swift-service-lifecycle) stop it cleanly:
/// a refresh already sent is finished and committed first.
public final class Daemon: Service {
    private let store: any AccountStore
    private let configuration: DaemonConfiguration
    private let logger: Logger
    private let instance: DaemonInstance
    private let scheduler: DaemonScheduler
    private let switcher: AutoSwitcher
    private let api: DaemonAPI
    private let metrics: DaemonMetrics
    private let alerts: DaemonAlerts?

    /// Creates a daemon over an open store.
    ///
    /// - Parameter instance: The data directory's claim from ``DaemonInstance/claim(in:)``, held
    ///   until the daemon is released: the socket is only replaced or removed under it.
    package init(
        store: any AccountStore, endpoints: ChappieEndpoints, configuration: DaemonConfiguration, instance: DaemonInstance, logger: Logger
    ) {
        self.store = store
        self.instance = instance
        self.configuration = configuration
        self.logger = logger
        let startedAt = Date()
        metrics = DaemonMetrics(store: store, startedAt: startedAt)
        // Every refresh, the refresh loop's and the polls', is counted where it happens.
        let usage = UsageService(store: store, endpoints: endpoints, refreshEvents: metrics.counters.record)
        let state = DaemonState(
            initialBackoff: configuration.initialBackoff, maximumBackoff: configuration.maximumBackoff, startedAt: startedAt,
            counters: metrics.counters)
        var alerts: DaemonAlerts?
        if !configuration.alerts.isEmpty || configuration.autoRedeem {
            let counters = metrics.counters
            alerts = DaemonAlerts(
                monitor: AlertMonitor(
                    directory: store.location.directory, thresholds: configuration.alerts.thresholds, timeZone: configuration.timeZone),
                dispatcher: configuration.alerts.isEmpty
                    ? nil
                    : AlertDispatcher(
                        targets: configuration.alerts, http: endpoints.httpClient(), retryDelay: configuration.alertRetryDelay, logger: logger,
                        record: counters.alertDelivered),
                credits: ResetCreditsService(store: store, tokens: usage.tokens, http: endpoints.httpClient()), autoRedeem: configuration.autoRedeem,
                logger: logger)
        }
        self.alerts = alerts
        scheduler = DaemonScheduler(
            store: store, usage: usage, configuration: configuration, state: state, logger: logger, alerts: alerts,
            rollouts: RolloutLimitsWatcher(store: store))
        switcher = AutoSwitcher(store: store, usage: usage, configuration: configuration, state: state, logger: logger, alerts: alerts)
        api = DaemonAPI(store: store, usage: usage, state: state, metrics: metrics)
    }

    /// Runs until cancelled or shut down gracefully.
    public func run() async throws {
        let listener = try UnixSocket.listen(at: configuration.socket.path)
        let listening = UnixSocket.Identity(of: configuration.socket.path)
        let server: DaemonSocketServer
        do {
            server = try await DaemonSocketServer.start(
                listener: listener, limits: DaemonSocketServer.Limits(requestDeadline: configuration.requestTimeout)
            ) { [api] request in
                await api.answer(request)
            }
        } catch {
            close(listener)
            throw error
        }
        defer { logger.info("daemon stopped") }
        do {
            try await serve()
        } catch {
            await server.stop()
            listening?.unlinkIfUnchanged()
            throw error
        }
        await server.stop()
        // The socket is removed only while it is still this daemon's: another daemon that has
        // taken the path since keeps its socket.
        listening?.unlinkIfUnchanged()
        // Alerts still being delivered (a webhook retrying) get a few seconds, then stop, logged.
        if let stopped = await alerts?.dispatcher?.drain(within: .seconds(5)), stopped > 0 {
            logger.warning("alerts not delivered before the daemon stopped", metadata: ["alerts": "\(stopped)"])
        }
    }

    /// Everything the daemon does while its socket is served.
    private func serve() async throws {
        var endpoint: MetricsEndpoint?
        if let listener = configuration.metrics {
            endpoint = try await MetricsEndpoint.start(
                listener, metrics: metrics,
                dashboard: Dashboard(
                    store: store, timeZone: configuration.timeZone,
                    polling: Dashboard.Polling(
                        interval: configuration.pollInterval, startedAt: api.state.startedAt,
                        lastPoll: { [state = api.state] in await state.lastPollAttemptAt })),
                logger: logger)
            let address = listener.address(port: endpoint?.server.port ?? listener.port)
            await api.state.served(at: "http://\(address)/")
            logger.info(
                "serving /metrics and the dashboard",
                metadata: [
                    "address": "\(address)", "dashboard": "http://\(address)/", "bearer_secret": "\(listener.tokenFile != nil)",
                ])
        }
        // Said once every listener is up: a port already taken stops the daemon before it says it started.
        logger.info(
            "daemon started",
            metadata: [
                "socket": "\(configuration.socket.path)", "refresh.margin_s": "\(configuration.refreshMargin.components.seconds)",
                "poll.interval_s": "\(configuration.pollInterval.components.seconds)", "auto_switch": "\(configuration.autoSwitch)",
            ])
        if let warning = configuration.codexRaceWarning { logger.warning("\(warning)") }
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await self.scheduler.refreshLoop() }
                    group.addTask { await self.scheduler.pollLoop() }
                    if self.configuration.autoSwitch {
                        // Apart from the polls, so that a long round does not hold up a switch.
                        group.addTask { [switcher = self.switcher, every = self.configuration.watchTick] in
                            while !Task.isCancelled {
                                await switcher.switchIfNeeded()
                                try? await Task.sleep(for: every)
                            }
                        }
                    }
                    group.addTask { try await self.watchKey() }
                    try await group.next()
                    group.cancelAll()
                }
            }
        } catch {
            await endpoint?.close()
            throw error
        }
        await endpoint?.close()
    }

    /// Takes up the store's new key when another process rotates it (reading the key file again);
    /// ends the daemon (with an error, so that systemd restarts it) when that is not possible (a
    /// passphrase, or a key file that does not hold the new key): everything it would seal from
    /// then on would be unreadable. On a team pool, whose key another machine's operator may change,
    /// it goes on instead, saying so once: every seal is refused meanwhile (nothing unreadable is
    /// written), and it takes up the key as soon as this machine has it.
    private func watchKey() async throws {
        var known = store.key.id
        var warned = false
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(5))
            if (try? await store.keyIsCurrent()) == false {
                do {
                    // Taking up the new key is what holding it steady does first.
                    try await store.withKeyHeld {}
                } catch {
                    // Shutting down while waiting for the key lock is not a key problem.
                    if Task.isCancelled { return }
                    if store.keyChangesElsewhere {
                        if !warned {
                            logger.error(
                                "the pool's key was changed and this machine does not have the new key; its accounts are not refreshed here until it is installed (team-pool.md in share/doc/chappie)"
                            )
                            warned = true
                        }
                        continue
                    }
                    logger.critical(
                        "the store's key was rotated by another process and the new key cannot be read; stopping (start the daemon again)")
                    throw error
                }
            }
            // A refresh or a read may have taken up the new key first.
            if store.key.id != known {
                known = store.key.id
                warned = false
                logger.notice("the store's key was rotated by another process; took up the new key", metadata: ["key": "\(known)"])
            }
        }
    }
}

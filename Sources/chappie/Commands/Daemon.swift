import ChappieSystem
import ChappieText
import ChappieDaemonClient
import ArgumentParser
import ChappieCore
import ChappieService
import Foundation
import Logging
import ServiceLifecycle

extension ChappieCommand {
    /// `chappie daemon`: the background service.
    struct Daemon: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "daemon",
            abstract: "Keep tokens fresh and usage polled in the background, with a local API on a Unix socket.",
            discussion: """
                Refreshes each account before its token expires, polls usage every --poll-interval (every \
                --near-limit-poll-interval once an account is at --near-limit-percent), and with --auto-switch \
                moves off the active account when it reaches its limit, within seconds of any chappie command \
                storing that reading. With --alert-webhook or --alert-command (or the alert-* settings) it \
                tells of windows past --alert-at, resets, sign-ins needed, switches and banked credits \
                (operations.md in share/doc/chappie, "Alerts"). With --http 127.0.0.1:PORT \
                it serves a read-only dashboard of the accounts' usage in the browser, and /metrics. SIGTERM or \
                Ctrl-C stop it cleanly. See operations.md in share/doc/chappie for a systemd unit.
                """)

        @Option(help: ArgumentHelp("Refresh this long before a token expires (default: 10m).", valueName: "duration"), transform: parseDuration)
        var refreshMargin: Duration = .seconds(600)
        @Option(
            help: ArgumentHelp("Poll an account's usage when its latest reading is this old (default: 10m).", valueName: "duration"),
            transform: parseDuration)
        var pollInterval: Duration = .seconds(600)
        @Option(
            help: ArgumentHelp("Poll this often once an account is at --near-limit-percent or more (default: 60s).", valueName: "duration"),
            transform: parseDuration)
        var nearLimitPollInterval: Duration = .seconds(60)
        @Option(help: ArgumentHelp("The use of the binding window from which --near-limit-poll-interval applies.", valueName: "percent"))
        var nearLimitPercent: Double = 80
        @Flag(help: "Switch to the best account when the active one reaches its limit.") var autoSwitch = false
        @Flag(help: "Let auto-switch move to a personal account from a workspace seat, or the other way (by default it keeps to the kind it leaves).")
        var autoSwitchAnyKind = false
        @Option(
            help: ArgumentHelp(
                "The wait after an account's first failure; it doubles each time, up to --max-backoff (default: 30s).", valueName: "duration"),
            transform: parseDuration)
        var backoff: Duration = .seconds(30)
        @Option(
            help: ArgumentHelp("The longest wait after repeated failures of one account (default: 30m).", valueName: "duration"),
            transform: parseDuration)
        var maxBackoff: Duration = .seconds(1800)
        @Option(help: ArgumentHelp("Where auto-switch writes auth.json for Codex (default: the codex-home setting).", valueName: "dir"))
        var codexHome: String?
        @Option(help: ArgumentHelp("The socket of the local API (default: chappie.sock in the data directory).", valueName: "path"))
        var socket: String?
        @Option(
            help: ArgumentHelp("How long a socket client may take to send its request and take the reply (default: 10s).", valueName: "duration"),
            transform: parseDuration)
        var requestTimeout: Duration = .seconds(10)
        @Option(
            help: ArgumentHelp(
                "Serve the dashboard at http://ADDRESS/ and Prometheus metrics at /metrics (loopback unless --http-token-file is given).",
                valueName: "host:port"))
        var http: String?
        @Option(help: ArgumentHelp("The same as --http (its first name, kept for existing set-ups).", valueName: "host:port"))
        var metricsListen: String?
        @Option(help: ArgumentHelp("A file (0600) whose first line is the bearer secret the dashboard and /metrics require.", valueName: "file"))
        var httpTokenFile: String?
        @Option(help: ArgumentHelp("The time zone the dashboard writes times in, such as Europe/Paris (default: the system's).", valueName: "zone"))
        var tz: String?
        @Option(
            help: ArgumentHelp(
                "Send each alert to this webhook as a JSON POST (repeatable; https, or http on loopback; default: the alert-webhook setting).",
                valueName: "url"))
        var alertWebhook: [String] = []
        @Option(
            help: ArgumentHelp(
                "Run this command with each alert as JSON on its standard input, with no shell (default: the alert-command setting).",
                valueName: "command"))
        var alertCommand: String?
        @Option(
            help: ArgumentHelp("The used percents that fire threshold alerts (default: the alert-at setting, else 80,95,100).", valueName: "list"))
        var alertAt: String?
        @Option(name: .customLong("alert-retry-delay-ms"), help: .hidden) var alertRetryDelayMilliseconds = 10_000
        @Flag(help: "Redeem a banked reset credit when an account reaches its limit (never otherwise).") var autoRedeem = false
        @Option(help: "Log format: text or json.") var logFormat: LogFormat = .text
        @Option(help: "Log level: trace, debug, info, notice, warning, error.") var logLevel: String = "info"
        @Flag(
            name: .customLong("stop-when-stdin-closes"),
            help: "Stop (as on SIGTERM) when standard input ends: a supervisor that holds its other end and dies takes the daemon with it.")
        var stopWhenStdinCloses = false
        @OptionGroup var global: GlobalOptions

        enum LogFormat: String, ExpressibleByArgument, CaseIterable { case text, json }

        func validate() throws {
            guard Logger.Level(rawValue: logLevel) != nil else {
                throw ValidationError("--log-level must be trace, debug, info, notice, warning or error")
            }
            guard (0...100).contains(nearLimitPercent) else { throw ValidationError("--near-limit-percent must be between 0 and 100") }
            guard pollInterval >= .seconds(1), nearLimitPollInterval >= .seconds(1), backoff >= .seconds(1), requestTimeout >= .seconds(1) else {
                throw ValidationError("--poll-interval, --near-limit-poll-interval, --backoff and --request-timeout must be at least 1s")
            }
            _ = try metricsListener()
            _ = try timeZone(tz)
            do {
                for url in alertWebhook { _ = try AlertTargets.webhook(url) }
                if let alertCommand { _ = try AlertTargets.command(alertCommand) }
                if let alertAt { _ = try AlertTargets.thresholds(alertAt) }
            } catch {
                throw ValidationError(error.message)
            }
            if tz != nil, http == nil, metricsListen == nil { throw ValidationError("--tz is for the dashboard: give --http too") }
        }

        /// Where the dashboard and /metrics are served, from --http (or --metrics-listen) and --http-token-file.
        func metricsListener() throws -> MetricsListener? {
            if let http, let metricsListen, http != metricsListen {
                throw ValidationError("--http and --metrics-listen are two names for one listener: give one address")
            }
            guard let address = http ?? metricsListen else {
                if httpTokenFile != nil { throw ValidationError("--http-token-file is for --http; give both") }
                return nil
            }
            do {
                return try MetricsListener(
                    address: address, tokenFile: httpTokenFile.map { expandedPath($0) }, option: http != nil ? "--http" : "--metrics-listen")
            } catch {
                throw ValidationError(error.description)
            }
        }

        func run() async throws {
            // One level for chappie's lines and its libraries' (requests, lock waits, refresh decisions).
            ProcessLogging.configure(level: global.verbose ? .debug : Logger.Level(rawValue: logLevel) ?? .info, json: logFormat == .json)
            let logger = Logger(label: "chappie.daemon")
            if stopWhenStdinCloses { SignalRelay.terminateWhenStandardInputEnds() }
            // SIGTERM or SIGINT while the store opens (it may wait for a key lock) or while the
            // data directory is claimed stops the daemon cleanly before it starts; from then on
            // they stop the service group gracefully. One relay takes them from start to end, so
            // that none is dropped between the two.
            let options = try global.serviceOptions()
            let socketOption = socket.map { expandedPath($0) }
            let started: (services: ChappieServices, instance: DaemonInstance, socket: URL)
            do {
                // The start-up's handler stays until the service group's replaces it (below), so a
                // signal in between is remembered rather than given its default action.
                started = try await cancellingOnSignals(releasing: false) {
                    let started = try await ChappieServices.startingDaemon(options, socket: socketOption)
                    try Task.checkCancellation()
                    return started
                }
            } catch is CancellationError {
                logger.info("stopped before it started")
                return
            }
            let (services, instance, socketURL) = started
            // The flags, else this machine's settings (never the store's: see LocalSettings).
            var alerts = try services.settings.local().alertTargets()
            if !alertWebhook.isEmpty { alerts.webhooks = try alertWebhook.map(AlertTargets.webhook) }
            if let alertCommand { alerts.command = try AlertTargets.command(alertCommand) }
            if let alertAt { alerts.thresholds = try AlertTargets.thresholds(alertAt) }
            if !alerts.isEmpty {
                logger.info(
                    "alerts",
                    metadata: [
                        "webhooks": "\(alerts.webhooks.map(AlertTargets.redacted).joined(separator: " "))",
                        "command": "\(alerts.command.map { URL(fileURLWithPath: $0[0]).lastPathComponent } ?? "none")",
                        "thresholds": "\(alerts.thresholds.map { String(format: "%g", $0) }.joined(separator: ","))",
                    ])
            }
            var configuration = DaemonConfiguration(
                socket: socketURL, refreshMargin: refreshMargin, pollInterval: pollInterval, autoSwitch: autoSwitch,
                codexHome: codexHome.map { expandedPath($0) }, initialBackoff: backoff,
                maximumBackoff: max(backoff, maxBackoff), requestTimeout: requestTimeout, metrics: try metricsListener(),
                timeZone: try timeZone(tz), nearLimitPollInterval: nearLimitPollInterval, nearLimitPercent: nearLimitPercent)
            configuration.alerts = alerts
            configuration.alertRetryDelay = .milliseconds(max(1, alertRetryDelayMilliseconds))
            configuration.autoRedeem = autoRedeem
            configuration.autoSwitchAnyKind = autoSwitchAnyKind
            let daemon = services.daemon(configuration: configuration, instance: instance, logger: logger)
            let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [daemon], logger: logger))
            // A signal that came after the start-up ended asks for the shutdown now, and the group
            // stops as soon as it has started.
            SignalRelay.shared.onSignal { _ in Task { await group.triggerGracefulShutdown() } }
            try await group.run()
        }
    }

    /// `chappie status`: the daemon and the accounts.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status", abstract: "Whether a daemon runs (uptime, last refresh and poll) and each account's state.")

        @Option(help: ArgumentHelp("The daemon's socket (default: chappie.sock in the data directory).", valueName: "path")) var socket: String?
        @OptionGroup var global: GlobalOptions

        struct Output {
            var daemon: DaemonReply.Status?
            var accounts: [Account]
        }

        func run() async throws {
            let (daemon, accounts, note) = try await DaemonOrStore(options: try global.serviceOptions(), socket: socket.map { expandedPath($0) })
                .status()
            if let note { StandardStream.error.write("warning: \(TerminalText.sanitized(note))\n") }
            let output = Output(daemon: daemon, accounts: accounts)
            if global.json {
                struct StatusJSON: Encodable {
                    var daemon: DaemonReply.Status?
                    var accounts: [AccountJSON]
                }
                try JSONOutput.print(StatusJSON(daemon: output.daemon, accounts: output.accounts.map { AccountJSON($0) }))
                return
            }
            if let daemon = output.daemon {
                print(
                    "Daemon: running, pid \(daemon.pid), started \(Formatting.localTime(daemon.startedAt)) (\(Formatting.relative(daemon.startedAt)))"
                )
                print(
                    "Last refresh: \(daemon.lastRefreshAt.map { Formatting.relative($0) } ?? "none yet"); last poll: \(daemon.lastPollAt.map { Formatting.relative($0) } ?? "none yet")"
                )
                print(
                    "Refreshes: \(daemon.refreshes) (\(daemon.refreshFailures) failed); polls: \(daemon.polls) (\(daemon.pollFailures) failed); switches: \(daemon.switches)"
                )
                if let dashboard = daemon.dashboard { print("Dashboard: \(TerminalText.sanitized(dashboard))") }
            } else {
                print("Daemon: not running (start it with chappie daemon, or refresh from cron)")
            }
            var table = TextTable(
                " ", "NAME", "STATUS", "TOKEN EXPIRES", TextTable.Column("LAST REFRESH", drop: 1),
                TextTable.Column("CODEX HOME", drop: 2, clips: true),
                TextTable.Column("NOTE", clips: true))
            for account in output.accounts {
                let note = output.daemon?.backingOff[account.name.rawValue].map { "retrying \(Formatting.relative($0))" } ?? account.lastError ?? ""
                table.append([
                    account.isActive ? "*" : " ", TextTable.Cell(account.name.rawValue), TextTable.Cell(account.status.rawValue),
                    TextTable.Cell(account.accessTokenExpiresAt.map { Formatting.relative($0) } ?? "-"),
                    TextTable.Cell(account.lastRefreshAt.map { Formatting.relative($0) } ?? "-"),
                    Formatting.codexHome(account.codexHome), TextTable.Cell(TerminalText.clipped(note, to: 80)),
                ])
            }
            print(output.accounts.isEmpty ? "No accounts yet." : table.render())
        }
    }
}

import ChappieSystem
import ChappieText
import ChappieDaemonClient
import ArgumentParser
import Chappie
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie usage …`: the 5-hour and weekly windows, now and over time.
    struct Usage: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "usage",
            abstract: "Show, poll, report and prune accounts' usage windows.",
            subcommands: [Show.self, Poll.self, History.self, Report.self, Prune.self], defaultSubcommand: Show.self)
    }
}

extension ChappieCommand.Usage {
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "The current 5-hour and weekly windows of one or all accounts (polled now unless --cached).")

        @Argument(help: "The account (default: all).", completion: .accountNames, transform: parseAccountName) var name: AccountName?
        @Flag(help: "Use the stored readings; do not poll.") var cached = false
        @Flag(help: "At the recent burn rate, when each window runs out.") var forecast = false
        @Option(
            help: ArgumentHelp("Readings younger than this are not polled again (default: 60s).", valueName: "duration"), transform: parseDuration)
        var maxAge: Duration = .seconds(60)
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let name = try await global.account(self.name)
            // With --cached and a running daemon, the daemon's view is shown without opening the store.
            if cached && !forecast, let (all, latest) = try await DaemonOrStore(options: try global.serviceOptions()).cachedUsage() {
                let accounts = name.map { name in all.filter { $0.name == name } } ?? all
                if let name, accounts.isEmpty {
                    throw CommandFailure(message: "there is no account named \(name)", exitCode: .failure)
                }
                return try show(accounts: accounts, latest: latest, failures: [:], forecasts: [:])
            }
            let service = try await global.services().usage
            let accounts = try await service.accounts(named: name.map { [$0] } ?? [])
            var failures: [String: String] = [:]
            if !cached {
                let (service, accounts, maxAge) = (service, accounts, self.maxAge)
                for result in try await cancellingOnSignals(stoppedIfSignalled: true, { await service.pollAll(accounts, maxAge: maxAge) }) {
                    if let error = result.error {
                        failures[result.account.name.rawValue] = CommandFailure(error, account: result.account.name)?.message ?? "\(error)"
                    }
                }
            }
            var forecasts: [Int64: (Date?, Date?)] = [:]
            if forecast {
                for account in accounts { forecasts[account.id] = try await service.forecast(for: account) }
            }
            try show(accounts: accounts, latest: try await service.latest(), failures: failures, forecasts: forecasts)
        }

        private func show(accounts: [Account], latest: [Int64: UsageSample], failures: [String: String], forecasts: [Int64: (Date?, Date?)]) throws {
            struct Row: Encodable {
                var name: String
                var plan: String?
                var observedAt: Date?
                var fiveHour: ChappieUsageWindow?
                var weekly: ChappieUsageWindow?
                var binding: String?
                var limitReached: Bool?
                var fiveHourRunsOutAt: Date?
                var weeklyRunsOutAt: Date?
                var error: String?
            }
            var rows: [Row] = []
            for account in accounts {
                let sample = latest[account.id]
                let snapshot = sample?.snapshot
                let runOut = forecasts[account.id] ?? (nil, nil)
                rows.append(
                    Row(
                        name: account.name.rawValue, plan: (snapshot?.plan ?? account.info.plan)?.rawValue, observedAt: sample?.observedAt,
                        fiveHour: snapshot?.shortWindow, weekly: snapshot?.longWindow,
                        binding: snapshot?.bindingWindow.map { $0 == snapshot?.shortWindow ? "5h" : "weekly" }, limitReached: snapshot?.limitReached,
                        fiveHourRunsOutAt: runOut.0, weeklyRunsOutAt: runOut.1, error: failures[account.name.rawValue]))
            }
            if global.json {
                try JSONOutput.print(
                    accounts.map { account in
                        var json = AccountJSON(account, usage: latest[account.id])
                        if let runOut = forecasts[account.id] {
                            json.usage?.fiveHourRunsOutAt = runOut.0
                            json.usage?.weeklyRunsOutAt = runOut.1
                        }
                        json.lastError = failures[account.name.rawValue] ?? json.lastError
                        return json
                    })
            } else if rows.isEmpty {
                print("No accounts yet.")
            } else {
                let columns: [TextTable.Column] =
                    ["NAME", TextTable.Column("PLAN", drop: 3), "5-HOUR", "WEEKLY", TextTable.Column("READ", drop: 2)]
                    + (forecast ? [TextTable.Column("5H RUNS OUT", drop: 1), TextTable.Column("WEEKLY RUNS OUT", drop: 0)] : [])
                var table = TextTable(columns: columns)
                for row in rows {
                    let age = row.observedAt.map { Formatting.relative($0) } ?? "never"
                    let plan = row.plan.map { ChappiePlan(rawValue: $0).displayName } ?? "-"
                    let bindingFull = row.limitReached == true
                    var cells = [
                        TextTable.Cell(row.name), TextTable.Cell(plan),
                        windowCell(row.fiveHour, limitReached: bindingFull && row.binding == "5h"),
                        windowCell(row.weekly, limitReached: bindingFull && row.binding == "weekly"), TextTable.Cell(age),
                    ]
                    if forecast {
                        cells += [
                            TextTable.Cell(row.fiveHourRunsOutAt.map(Formatting.localTime) ?? "-"),
                            TextTable.Cell(row.weeklyRunsOutAt.map(Formatting.localTime) ?? "-"),
                        ]
                    }
                    table.append(cells)
                }
                print(table.render())
                for (name, message) in failures.sorted(by: { $0.key < $1.key }) {
                    StandardStream.error.write("\(name): poll failed: \(message)\n")
                }
            }
            if !failures.isEmpty { throw ExitStatus.temporaryFailure }
        }
    }

    struct Poll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "poll", abstract: "Poll accounts' usage now and store it (8 at a time).",
            discussion:
                "Polls the named accounts (else $CHAPPIE_ACCOUNT's), or with --all every signed-in account; also reads their tokens per day (wham/profiles/me) when that was last read an hour ago or more."
        )

        @OptionGroup var accounts: AccountBatchOptions
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let names = try await self.accounts.chosen(global, verb: "poll")
            let service = try await global.services().usage
            // --all: every account that can be polled (signed in); a named one is polled whatever its state.
            let accounts =
                self.accounts.all ? try await service.accounts(named: []).filter { $0.status == .ok } : try await service.accounts(named: names)
            let concurrency = self.accounts.concurrency
            let results = try await cancellingOnSignals(stoppedIfSignalled: true) {
                let results = await service.pollAll(accounts, maxAge: .zero, concurrency: concurrency)
                // Tokens per day too, at most hourly per account; a failure there fails no poll.
                await service.readDueTokenHistories(results.filter { $0.error == nil }.map(\.account), concurrency: concurrency)
                return results
            }
            var codes: [Int32] = []
            var failed: [(name: AccountName, line: String)] = []
            for result in results {
                if let error = result.error {
                    let failure = CommandFailure(error, account: result.account.name)
                    codes.append(failure?.exitCode.rawValue ?? ChappieExitCode.temporaryFailure)
                    failed.append((result.account.name, TerminalText.sanitized(failure?.message ?? "\(error)")))
                } else if !global.json, let main = result.snapshots.first {
                    print("\(result.account.name): 5-hour \(describeWindow(main.shortWindow)); weekly \(describeWindow(main.longWindow))")
                }
            }
            FailureLines.write(failed, of: results.count)
            if global.json {
                struct Polled: Encodable {
                    var account: String
                    var ok: Bool
                    var error: String?
                    var usage: UsageJSON?
                }
                let latest = try await service.latest()
                try JSONOutput.print(
                    results.map { result in
                        Polled(
                            account: result.account.name.rawValue, ok: result.error == nil,
                            error: result.error.map { CommandFailure($0, account: result.account.name)?.message ?? "\($0)" },
                            usage: result.error == nil ? latest[result.account.id].map { UsageJSON($0, reserve: result.account.reservePercent) } : nil
                        )
                    })
            }
            let exit = ChappieExitCode.mostSerious(codes)
            if exit != ChappieExitCode.success { throw ExitCode(exit) }
        }
    }

    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "history", abstract: "An account's stored readings, oldest first.")

        @Argument(help: "The account (default: $CHAPPIE_ACCOUNT).", completion: .accountNames, transform: parseAccountName) var name: AccountName?
        @OptionGroup var period: TimeRangeOptions
        @Option(help: "csv, json or table (default: table on a terminal, else csv).") var format: OutputFormat?
        @Flag(help: "Draw each window over time, fitted to the terminal (plain ASCII with NO_COLOR or a dumb terminal).") var chart = false
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if chart, format != nil { throw ValidationError("--chart draws; give it without --format") }
        }

        func run() async throws {
            guard let name = try await global.account(self.name) else {
                throw CommandFailure(message: "name the account, or set CHAPPIE_ACCOUNT", exitCode: ExitCode(ChappieExitCode.usage))
            }
            let (zone, (since, until)) = (try period.zone(), try period.period())
            let samples = try await global.services().usage.history(of: name, since: since, until: until)
            if chart {
                let (width, style) = (Terminal.width ?? 80, UsageChart.style())
                for window in [ChappieUsageWindow.Kind.fiveHour, .weekly] {
                    let lines = UsageChart(window: window, width: width, style: style, timeZone: zone).lines(account: name, samples: samples)
                    print(lines.map { TerminalText.sanitized($0) }.joined(separator: "\n") + "\n")
                }
                return
            }
            if format == .json || (format == nil && global.json) {
                struct Reading: Encodable {
                    var observedAt: Date
                    var source: String
                    var limitID: String
                    var plan: String?
                    var fiveHour: WindowJSON?
                    var weekly: WindowJSON?
                    var limitReached: Bool
                }
                return try JSONOutput.print(
                    samples.map { sample in
                        Reading(
                            observedAt: sample.observedAt, source: sample.source.rawValue, limitID: sample.limitID,
                            plan: sample.snapshot.plan?.rawValue,
                            fiveHour: sample.snapshot.shortWindow.map(WindowJSON.init), weekly: sample.snapshot.longWindow.map(WindowJSON.init),
                            limitReached: sample.snapshot.limitReached)
                    })
            }
            let formatter = ISO8601DateFormatter()
            formatter.timeZone = zone
            let columns = [
                "observed_at", "source", "limit_id", "plan", "five_hour_used_percent", "five_hour_resets_at",
                "weekly_used_percent", "weekly_resets_at", "limit_reached",
            ]
            let rows: [[UsageReport.Cell]] = samples.map { sample in
                let s = sample.snapshot
                return [
                    .text(formatter.string(from: sample.observedAt)), .text(sample.source.rawValue), .text(sample.limitID),
                    s.plan.map { .text($0.rawValue) } ?? .empty,
                    s.shortWindow.map { .number($0.usedPercent) } ?? .empty,
                    s.shortWindow?.resetsAt.map { .text(formatter.string(from: $0)) } ?? .empty,
                    s.longWindow.map { .number($0.usedPercent) } ?? .empty,
                    s.longWindow?.resetsAt.map { .text(formatter.string(from: $0)) } ?? .empty,
                    .integer(s.limitReached ? 1 : 0),
                ]
            }
            try emit(UsageReport(columns: columns, rows: rows), format: format, to: nil, options: try global.serviceOptions())
        }
    }

    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "report",
            abstract:
                "Usage per hour, day, week, window or machine and account, as CSV (default off a terminal), JSON or a table; or charts in one HTML file.",
            discussion:
                "The columns are stable and described in man chappie and cli.md (share/doc/chappie). --format html writes a self-contained page with each account's windows as charts (without --by)."
        )

        @OptionGroup var period: TimeRangeOptions
        @Option(help: "hour, day, week, window or machine (default: day).") var by: ReportGrouping?
        @Option(help: "Only this account (repeatable).", completion: .accountNames, transform: parseAccountName) var account: [AccountName] = []
        @Option(help: "csv, json, table or html (default: table on a terminal, else csv).") var format: ReportFormat?
        @Option(help: "Write to this file instead of standard output.") var output: String?
        @Flag(help: "Add tokens per day (the service's count, by UTC day) per account: a tokens column, or bars in html.") var tokens = false
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if format == .html, by != nil { throw ValidationError("--by is for the tables; --format html draws every reading, without grouping") }
            if tokens, let by, ![.day, .week].contains(by) {
                throw ValidationError("--tokens adds a column to day and week rows: use --by day or --by week")
            }
        }

        func run() async throws {
            let (zone, (since, until)) = (try period.zone(), try period.period())
            if format == .html {
                let page = try await global.services().usage.htmlReport(of: account, since: since, until: until, timeZone: zone, tokens: tokens)
                try write(page, to: output, options: try global.serviceOptions())
                return
            }
            let report = try await global.services().usage.report(
                of: account, since: since, until: until, grouping: (by ?? .day).grouping, timeZone: zone, tokens: tokens)
            let chosen = format?.tabular ?? (global.json ? .json : global.output == .table ? .table : nil)
            try emit(report, format: chosen, to: output, options: try global.serviceOptions())
        }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prune",
            abstract: "Delete usage readings older than a duration (default: the usage-retention setting, else 365d). The audit log is kept.")

        @Option(help: ArgumentHelp("Delete readings older than this (90d, 12h).", valueName: "duration"), transform: parseDuration)
        var olderThan: Duration?
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let (deleted, cutoff) = try await global.services().usage.prune(olderThan: olderThan)
            if global.json {
                try JSONOutput.print(["deleted": deleted])
            } else {
                print("Deleted \(deleted) readings older than \(Formatting.localTime(cutoff)).")
            }
        }
    }
}

/// How a table-like result is written.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case csv, json, table
}

/// `--format` of `usage report`: the tabular formats, or a page of charts.
enum ReportFormat: String, ExpressibleByArgument, CaseIterable {
    case csv, json, table, html

    /// The tabular format, `nil` for html.
    var tabular: OutputFormat? { OutputFormat(rawValue: rawValue) }
}

/// `--by` of `usage report`.
enum ReportGrouping: String, ExpressibleByArgument, CaseIterable {
    case hour, day, week, window, machine

    var grouping: UsageReport.Grouping { UsageReport.Grouping(rawValue: rawValue) ?? .day }
}

/// Writes a report as CSV, JSON or a table; CSV by default when standard output is not a terminal.
func emit(_ report: UsageReport, format: OutputFormat?, to path: String?, options: ServiceOptions) throws {
    let format = format ?? (path == nil && isatty(STDOUT_FILENO) == 1 ? .table : .csv)
    let text: String
    switch format {
    case .csv:
        text = report.csv()
    case .table:
        // On a terminal: short headers, and on a narrow one the columns that repeat or elaborate go
        // first (CSV and JSON keep every column under its stable name).
        let droppedFirst = [
            "email", "plan", "period_end", "first_sample", "last_sample", "samples", "tokens", "resets_seen", "five_hour_mean_percent",
            "weekly_mean_percent",
        ]
        let short = [
            "period_start": "PERIOD", "five_hour_peak_percent": "5H PEAK", "five_hour_mean_percent": "5H MEAN", "weekly_peak_percent": "WK PEAK",
            "weekly_mean_percent": "WK MEAN", "limit_reached": "LIMIT", "resets_seen": "RESETS", "peak_percent": "PEAK", "resets_at": "RESETS AT",
        ]
        var table = TextTable(
            columns: report.columns.map { name in
                TextTable.Column(
                    short[name] ?? name.uppercased().replacingOccurrences(of: "_", with: " "), drop: droppedFirst.firstIndex(of: name).map { $0 + 1 })
            })
        for row in report.rows { table.append(row.map(\.text)) }
        text = table.render() + "\n"
    case .json:
        // The columns' names, in camelCase as every --json output (docs/json.md).
        let objects = report.rows.map { row in
            Dictionary(
                uniqueKeysWithValues: zip(report.columns.map(camelCase), row).map { column, cell -> (String, Any) in
                    switch cell {
                    case .text(let value): (column, value)
                    case .number(let value): (column, (value * 100).rounded() / 100)
                    case .integer(let value): (column, value)
                    case .empty: (column, NSNull())
                    }
                })
        }
        let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        text = String(decoding: data, as: UTF8.self) + "\n"
    }
    try write(text, to: path, options: options)
}

/// A report column's JSON name: `five_hour_peak_percent` as `fiveHourPeakPercent`; `limit_reached`,
/// a count of readings, as `limitReachedReadings`, since a JSON `limitReached` is a boolean.
func camelCase(_ name: String) -> String {
    if name == "limit_reached" { return "limitReachedReadings" }
    let parts = name.split(separator: "_")
    return (parts.first.map(String.init) ?? "") + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
}

/// Writes text to a file (replaced atomically) or, without one, to standard output; never over one
/// of chappie's own files.
func write(_ text: String, to path: String?, options: ServiceOptions) throws {
    guard let path else {
        StandardStream.output.write(text)
        return
    }
    let url = expandedPath(path)
    if let refusal = ChappieServices.refusalToWrite(url, options: options) {
        throw CommandFailure(message: "cannot write \(url.path): \(refusal)", exitCode: .failure)
    }
    do {
        try Data(text.utf8).write(to: url, options: .atomic)
    } catch {
        throw CommandFailure(message: "cannot write \(url.path): \(error.localizedDescription)", exitCode: .failure)
    }
}

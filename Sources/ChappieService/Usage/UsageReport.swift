import ChappieText
package import ChappieCore
package import ChappieStore
package import Foundation

/// `chappie usage report`: usage history summed per period (hour, day, week in a time zone) and
/// account, or one row per observed window. The columns are stable (docs/cli.md).
public struct UsageReport: Sendable {
    /// How rows are grouped.
    public enum Grouping: String, Sendable, CaseIterable {
        /// One row per hour and account.
        case hour
        /// One row per day and account.
        case day
        /// One row per ISO week (from Monday) and account.
        case week
        /// One row per observed 5-hour or weekly window.
        case window
        /// One row per machine and account: which machine of a team pool took which readings.
        case machine
    }

    /// A cell: text, a number, or empty.
    public enum Cell: Sendable, Equatable {
        /// Text.
        case text(String)
        /// A number, shown with at most two decimals.
        case number(Double)
        /// A count.
        case integer(Int)
        /// Nothing (a window that was never reported).
        case empty

        /// The cell as CSV and tables show it: numbers with at most two decimals.
        public var text: String {
            switch self {
            case .text(let text): text
            case .integer(let value): String(value)
            case .number(let value): DecimalText.format(value)
            case .empty: ""
            }
        }

        /// The cell as CSV writes it: text that could start a spreadsheet formula is neutralised
        /// (``CSVWriter/neutralized(_:)``).
        public var csvText: String {
            if case .text(let text) = self { return CSVWriter.neutralized(text) }
            return self.text
        }
    }

    /// The columns of period rows.
    public static let periodColumns = [
        "period_start", "period_end", "account", "email", "plan", "samples",
        "five_hour_peak_percent", "five_hour_mean_percent", "weekly_peak_percent", "weekly_mean_percent",
        "limit_reached", "resets_seen",
    ]
    /// The columns of window rows.
    public static let windowColumns = [
        "account", "email", "window", "resets_at", "first_sample", "last_sample", "samples", "peak_percent", "limit_reached",
    ]

    /// The columns of machine rows.
    public static let machineColumns = [
        "machine", "account", "email", "samples", "first_sample", "last_sample", "five_hour_peak_percent", "weekly_peak_percent",
    ]

    /// The column names.
    public var columns: [String]
    /// The rows, one cell per column.
    public var rows: [[Cell]]

    /// A report with these columns and rows.
    public init(columns: [String], rows: [[Cell]]) {
        self.columns = columns
        self.rows = rows
    }

    /// Builds a report from the store.
    ///
    /// - Parameters:
    ///   - accounts: The accounts to include.
    ///   - since: The first instant included; `until` the first excluded.
    ///   - grouping: Periods, or windows.
    ///   - timeZone: Where periods begin and end, and how times are written.
    ///   - tokens: Add the `tokens` column to day and week rows (other groupings have none): the
    ///     service's tokens per UTC day, a local day's row taking the UTC day of the same date; a
    ///     day with tokens and no reading gets a row of its own.
    package static func build(
        store: any UsageLog, accounts: [Account], since: Date?, until: Date?, grouping: Grouping, timeZone: TimeZone, tokens: Bool = false
    ) async throws -> UsageReport {
        let byID = Dictionary(uniqueKeysWithValues: accounts.map { ($0.id, $0) })
        let ids = accounts.map(\.id)
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = timeZone
        formatter.formatOptions = [.withInternetDateTime]
        if grouping == .window {
            let windows = try await store.usageWindows(since: since, until: until, accounts: ids)
                .sorted {
                    ($0.resetsAt, byID[$0.accountID]?.name.rawValue ?? "", $0.kind.rawValue) < (
                        $1.resetsAt, byID[$1.accountID]?.name.rawValue ?? "", $1.kind.rawValue
                    )
                }
            return UsageReport(
                columns: windowColumns,
                rows: windows.compactMap { window in
                    guard let account = byID[window.accountID] else { return nil }
                    return [
                        .text(account.name.rawValue), account.info.email.map(Cell.text) ?? .empty, .text(window.kind.rawValue),
                        .text(formatter.string(from: window.resetsAt)), .text(formatter.string(from: window.firstSample)),
                        .text(formatter.string(from: window.lastSample)), .integer(window.samples), .number(window.peakPercent),
                        .integer(window.limitReached),
                    ]
                })
        }
        if grouping == .machine {
            let summaries = try await store.usageByMachine(since: since, until: until, accounts: ids)
                .sorted { ($0.machine, byID[$0.accountID]?.name.rawValue ?? "") < ($1.machine, byID[$1.accountID]?.name.rawValue ?? "") }
            return UsageReport(
                columns: machineColumns,
                rows: summaries.compactMap { summary in
                    guard let account = byID[summary.accountID] else { return nil }
                    return [
                        .text(summary.machine), .text(account.name.rawValue), account.info.email.map(Cell.text) ?? .empty, .integer(summary.samples),
                        .text(formatter.string(from: summary.firstSample)), .text(formatter.string(from: summary.lastSample)),
                        summary.fiveHourPeak.map(Cell.number) ?? .empty, summary.weeklyPeak.map(Cell.number) ?? .empty,
                    ]
                })
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        calendar.firstWeekday = 2
        calendar.minimumDaysInFirstWeek = 4
        let component: Calendar.Component = grouping == .hour ? .hour : grouping == .day ? .day : .weekOfYear

        var accumulated = try await store.reduceUsageReadings(
            since: since, until: until, accounts: ids, into: PeriodAccumulator(calendar: calendar, component: component)
        ) { accumulator, reading in accumulator.add(reading) }
        accumulated.close()
        var periods = accumulated.periods
        // Tokens by account and period start; a period with tokens and no reading is added, empty.
        var tokenSums: [Int64: [Date: Int]] = [:]
        let withTokens = tokens && (grouping == .day || grouping == .week)
        if withTokens {
            var local = DateComponents()
            local.hour = 12
            // A day counts when its local day overlaps the period asked for; the store is asked from
            // a day before `since`'s date, in case the zone runs behind UTC.
            let first = since.map { $0.addingTimeInterval(-86_400).formatted(TokenBars.utcDay) }
            for entry in try await store.dailyTokens(since: first, accounts: ids) {
                let parts = entry.day.split(separator: "-").compactMap { Int($0) }
                guard parts.count == 3 else { continue }
                (local.year, local.month, local.day) = (parts[0], parts[1], parts[2])
                guard let noon = calendar.date(from: local), let day = calendar.dateInterval(of: .day, for: noon),
                    day.end > (since ?? .distantPast), day.start < (until ?? .distantFuture),
                    let interval = calendar.dateInterval(of: component, for: noon)
                else { continue }
                let sum = tokenSums[entry.accountID]?[interval.start] ?? 0
                tokenSums[entry.accountID, default: [:]][interval.start] = DailyTokens.adding(sum, entry.tokens)
                if periods[entry.accountID]?[interval.start] == nil {
                    periods[entry.accountID, default: [:]][interval.start] = PeriodAccumulator.Period(interval: interval)
                }
            }
        }
        var rows: [(Date, String, [Cell])] = []
        for (accountID, byStart) in periods {
            guard let account = byID[accountID] else { continue }
            for period in byStart.values {
                var cells: [Cell] = [
                    .text(formatter.string(from: period.interval.start)), .text(formatter.string(from: period.interval.end)),
                    .text(account.name.rawValue), account.info.email.map(Cell.text) ?? .empty,
                    account.info.plan.map { .text($0.rawValue) } ?? .empty, .integer(period.samples),
                    period.fivePeak.map(Cell.number) ?? .empty,
                    period.fiveCount > 0 ? .number(period.fiveSum / Double(period.fiveCount)) : .empty,
                    period.weekPeak.map(Cell.number) ?? .empty,
                    period.weekCount > 0 ? .number(period.weekSum / Double(period.weekCount)) : .empty,
                    .integer(period.reached), .integer(period.resets),
                ]
                if withTokens { cells.append(tokenSums[accountID]?[period.interval.start].map(Cell.integer) ?? .empty) }
                rows.append((period.interval.start, account.name.rawValue, cells))
            }
        }
        rows.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        return UsageReport(columns: periodColumns + (withTokens ? ["tokens"] : []), rows: rows.map(\.2))
    }

    /// The report as RFC 4180 CSV with a header row.
    public func csv() -> String {
        CSVWriter.record(columns) + rows.map { CSVWriter.record($0.map(\.csvText)) }.joined()
    }
}

/// Sums readings, read in account and time order, into periods of one account each.
private struct PeriodAccumulator: Sendable {
    struct Period: Sendable {
        var interval: DateInterval
        var samples = 0, fiveCount = 0, weekCount = 0, reached = 0, resets = 0
        var fivePeak: Double?, weekPeak: Double?, fiveSum = 0.0, weekSum = 0.0
    }

    let calendar: Calendar
    let component: Calendar.Component
    private(set) var periods: [Int64: [Date: Period]] = [:]
    private var currentAccount: Int64?
    private var current: Period?
    private var previousFive: Int64?, previousWeek: Int64?

    init(calendar: Calendar, component: Calendar.Component) {
        self.calendar = calendar
        self.component = component
    }

    /// Puts the open period away.
    mutating func close() {
        if let account = currentAccount, let period = current { periods[account, default: [:]][period.interval.start] = period }
    }

    mutating func add(_ reading: UsageReading) {
        let date = Date(timeIntervalSince1970: reading.observedAt)
        if reading.accountID != currentAccount {
            close()
            currentAccount = reading.accountID
            current = nil
            previousFive = nil
            previousWeek = nil
        }
        if let period = current, date < period.interval.start || date >= period.interval.end {
            close()
            current = nil
        }
        if current == nil {
            guard let interval = calendar.dateInterval(of: component, for: date) else { return }
            current = periods[reading.accountID]?[interval.start] ?? Period(interval: interval)
        }
        current!.samples += 1
        if let used = reading.fiveHourUsed {
            current!.fiveCount += 1
            current!.fiveSum += used
            current!.fivePeak = max(current!.fivePeak ?? used, used)
        }
        if let used = reading.weeklyUsed {
            current!.weekCount += 1
            current!.weekSum += used
            current!.weekPeak = max(current!.weekPeak ?? used, used)
        }
        if reading.limitReached { current!.reached += 1 }
        // A reset is seen when a window's reset time differs from the account's previous reading's.
        if let reset = reading.fiveHourResetsAt {
            if let previous = previousFive, previous != reset { current!.resets += 1 }
            previousFive = reset
        }
        if let reset = reading.weeklyResetsAt {
            if let previous = previousWeek, previous != reset { current!.resets += 1 }
            previousWeek = reset
        }
    }
}

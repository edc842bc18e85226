import ChappieCore
import ChappieStore
import Foundation

/// `chappie usage report --format html`: one self-contained page (no script, no external asset)
/// with each account's 5-hour and weekly windows over the period as inline SVG: one point per
/// stored reading, a dashed line where the window reset.
///
/// Every chart is `<svg class="chart" data-account="NAME" data-window="5h|weekly" data-points="N">`.
/// The page is well-formed XML (XHTML syntax), so any XML parser reads it. It holds account names,
/// e-mails, plans and readings, never a token.
enum UsageHTMLReport {
    /// One window of one account, as drawn: a point per reading, and where the window reset.
    struct Series: Sendable {
        /// Each reading's time (unix seconds) and use (0–100).
        var points: [(time: Double, used: Double)] = []
        /// When the window reset (unix seconds; ``WindowResets``).
        var resets: [Double] = []
        private var tracker = WindowResets()

        /// Adds a reading of the window, if it reported one.
        mutating func add(at time: Double, used: Double?, resetsAt: Int64?) {
            guard let used else { return }
            let clamped = min(100, max(0, used))
            points.append((time, clamped))
            if let reset = tracker.observe(time: time, used: clamped, resetsAt: resetsAt.map(Double.init)) { resets.append(reset) }
        }
    }

    /// One account's two windows over a period, and its newest reading in it.
    struct AccountSeries: Sendable {
        var fiveHour = Series()
        var weekly = Series()
        var latest: UsageReading?

        /// Adds a reading (the account's readings come oldest first).
        mutating func add(_ reading: UsageReading) {
            fiveHour.add(at: reading.observedAt, used: reading.fiveHourUsed, resetsAt: reading.fiveHourResetsAt)
            weekly.add(at: reading.observedAt, used: reading.weeklyUsed, resetsAt: reading.weeklyResetsAt)
            latest = reading
        }

        subscript(kind: ChappieUsageWindow.Kind) -> Series { kind == .fiveHour ? fiveHour : weekly }
    }

    /// The `codex` readings of these accounts between two times, in one pass over the store, by
    /// account id (an account without readings has none).
    static func gather(from store: any UsageLog, accounts: [Account], since: Date?, until: Date?) async throws -> [Int64: AccountSeries] {
        try await store.reduceUsageReadings(
            since: since, until: until, accounts: accounts.map(\.id), into: [Int64: AccountSeries]()
        ) { series, reading in
            series[reading.accountID, default: AccountSeries()].add(reading)
        }
    }

    /// The page, from the store: these accounts' readings between `since` and `until`.
    ///
    /// - Parameters:
    ///   - accounts: The accounts, in the order shown.
    ///   - since: The period's start (else the first reading's time); `until` its end (else `now`).
    ///   - timeZone: How times are written.
    ///   - tokens: Add each account's tokens per UTC day as bars.
    static func render(
        from store: any UsageLog, accounts: [Account], since: Date?, until: Date?, timeZone: TimeZone, tokens: Bool = false, now: Date = Date()
    ) async throws -> String {
        var daily: [Int64: [String: Int]]?
        if tokens {
            daily = [:]
            for entry in try await store.dailyTokens(since: nil, accounts: accounts.map(\.id)) {
                daily?[entry.accountID, default: [:]][entry.day] = entry.tokens
            }
        }
        return render(
            accounts: accounts, series: try await gather(from: store, accounts: accounts, since: since, until: until),
            since: since, until: until, timeZone: timeZone, tokens: daily, now: now)
    }

    /// The page, from each account's series (and tokens per day, by account, when given).
    static func render(
        accounts: [Account], series: [Int64: AccountSeries], since: Date?, until: Date?, timeZone: TimeZone, tokens: [Int64: [String: Int]]? = nil,
        now: Date = Date()
    ) -> String {
        let formatter = MinuteFormat.formatter(timeZone)
        let clock = MinuteFormat.formatter(timeZone, format: "HH:mm")
        let first = accounts.compactMap { account in
            series[account.id].flatMap { [$0.fiveHour.points.first?.time, $0.weekly.points.first?.time].compactMap { $0 }.min() }
        }.min()
        let start = since ?? first.map { Date(timeIntervalSince1970: $0) } ?? now
        let end = until ?? now
        let axis = TimeAxis(start: start, end: end, formatter: formatter)
        var body = """
            <h1>chappie usage</h1>
            <p class="period">\(HTMLText.escaped(formatter.string(from: start))) to \(HTMLText.escaped(formatter.string(from: end))) (\(HTMLText.escaped(timeZone.identifier))), \
            \(accounts.count) account\(accounts.count == 1 ? "" : "s"), made \(HTMLText.escaped(formatter.string(from: now)))</p>

            """
        for account in accounts {
            let drawn = series[account.id] ?? AccountSeries()
            body += """
                <section class="account">
                <h2>\(HTMLText.escaped(account.name.rawValue))</h2>
                <p class="who">\(HTMLText.escaped(account.info.email ?? "no e-mail")), \(HTMLText.escaped(account.info.plan?.rawValue ?? "no plan")), \
                \(HTMLText.escaped(account.status.rawValue))\(account.isActive ? ", active" : "")</p>

                """
            for kind in [ChappieUsageWindow.Kind.fiveHour, .weekly] {
                let used = kind == .fiveHour ? drawn.latest?.fiveHourUsed : drawn.latest?.weeklyUsed
                let resetsAt = kind == .fiveHour ? drawn.latest?.fiveHourResetsAt : drawn.latest?.weeklyResetsAt
                let caption =
                    "\(kind.label) window"
                    + (used.map {
                        // The reading's own time: a page read later must not call an old reading "now".
                        ", last reading \(format($0)) %"
                            + (drawn.latest.map { " (\(clock.string(from: Date(timeIntervalSince1970: $0.observedAt))))" } ?? "")
                            + (resetsAt.map { ", resets \(formatter.string(from: Date(timeIntervalSince1970: Double($0))))" } ?? "")
                    } ?? "")
                body += "<figure>\n<figcaption>\(HTMLText.escaped(caption))</figcaption>\n"
                body += chart(drawn[kind], account: account.name, kind: kind, axis: axis) + "\n</figure>\n"
            }
            if let tokens {
                let utc = TokenBars.utcDay
                let days = TokenBars.days(from: start.formatted(utc), to: end.formatted(utc))
                let counts = tokens[account.id] ?? [:]
                let total = days.reduce(0) { DailyTokens.adding($0, counts[$1] ?? 0) }
                body += "<figure>\n<figcaption>\(HTMLText.escaped("Tokens per day (UTC), \(TokenBars.short(total)) in all"))</figcaption>\n"
                body += TokenBars.svg(counts, days: days, label: "\(account.name.rawValue): tokens per day") + "\n</figure>\n"
            }
            body += "</section>\n"
        }
        return document(
            title: "chappie usage",
            style: """
                figure { display: inline-block; margin: 0 1.5em 1em 0; }
                figcaption { font-size: 13px; color: #555; }
                """, body: body)
    }

    /// The page around `body`: XHTML syntax, the charts' style and `style`, no script.
    static func document(title: String, style: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html xmlns="http://www.w3.org/1999/xhtml" lang="en">
        <head>
        <meta charset="utf-8"/>
        <title>\(HTMLText.escaped(title))</title>
        <style>
        body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
        section.account { margin-bottom: 2em; }
        svg.chart { background: #fafafa; border: 1px solid #ddd; }
        svg.chart .grid { stroke: #e4e4e4; }
        svg.chart line.tick { stroke: #efefef; }
        svg.chart .use { fill: none; stroke: #2a6fdb; stroke-width: 1.5; }
        svg.chart .point { fill: #2a6fdb; }
        svg.chart .reset { stroke: #d9822b; stroke-dasharray: 3 3; }
        svg.chart text { font-size: 10px; fill: #777; }
        rect.tokens { fill: #2e9e6b; }
        \(style)
        </style>
        </head>
        <body>
        \(body)</body>
        </html>

        """
    }

    /// Where the time axis is marked, and how: every 1, 2, 3, 6 or 12 hours of the zone's clock for
    /// a short period (`14:00`, a midnight as `Tue 24`), else every so many days at local midnight
    /// (`Tue 24` a day apart, `Nov 24` further): about seven marks, eight at most.
    static func ticks(from start: Date, to end: Date, timeZone: TimeZone) -> [(date: Date, label: String)] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let span = end.timeIntervalSince(start)
        guard span > 0 else { return [] }
        let day = MinuteFormat.formatter(timeZone, format: "EEE d")
        var ticks: [(date: Date, label: String)] = []
        if let hours = [1, 2, 3, 6, 12].first(where: { span / Double($0 * 3600) <= 7.5 }) {
            let clock = MinuteFormat.formatter(timeZone, format: "HH:mm")
            var date = calendar.dateInterval(of: .hour, for: start)?.start ?? start
            while date <= end {
                if date >= start, calendar.component(.hour, from: date) % hours == 0 {
                    ticks.append((date, calendar.component(.hour, from: date) == 0 ? day.string(from: date) : clock.string(from: date)))
                }
                date = date.addingTimeInterval(3600)
            }
            return ticks
        }
        let days = Int((span / (7.5 * 86400)).rounded(.up))
        let label = days == 1 ? day : MinuteFormat.formatter(timeZone, format: "MMM d")
        var date = calendar.startOfDay(for: start)
        if date < start { date = calendar.date(byAdding: .day, value: 1, to: date) ?? end }
        while date <= end {
            ticks.append((date, label.string(from: date)))
            // Midnight again each time: where a day begins at 01:00 (DST starting at midnight), the next still begins at 00:00.
            guard let next = calendar.date(byAdding: .day, value: days, to: date) else { break }
            date = calendar.startOfDay(for: next)
        }
        return ticks
    }

    /// The period every chart of a page spans, with its marks, worked out once per page.
    struct TimeAxis {
        let start: Date
        let end: Date
        /// How times are written (`MinuteFormat.formatter(_:format:)` in the page's zone).
        let formatter: DateFormatter
        /// ``ticks(from:to:timeZone:)`` of the period.
        let ticks: [(date: Date, label: String)]

        init(start: Date, end: Date, formatter: DateFormatter) {
            self.start = start
            self.end = end
            self.formatter = formatter
            ticks = UsageHTMLReport.ticks(from: start, to: end, timeZone: formatter.timeZone)
        }
    }

    /// One chart: 0–100 % up, the period across (marked by the axis' ticks), a point per reading
    /// joined by a line (a vertex each, and a dot each while there is room for them).
    static func chart(_ series: Series, account: AccountName, kind: ChappieUsageWindow.Kind, axis: TimeAxis) -> String {
        let (start, end, formatter) = (axis.start, axis.end, axis.formatter)
        let (width, height, left, bottom) = (480.0, 174.0, 34.0, 30.0)
        let span = max(end.timeIntervalSince(start), 1)
        let origin = start.timeIntervalSince1970
        func x(_ time: Double) -> String { format(left + (width - left - 4) * min(1, max(0, (time - origin) / span))) }
        func top(_ used: Double) -> Double { 4 + (height - bottom - 4) * (1 - used / 100) }
        func y(_ used: Double) -> String { format(top(used)) }
        var svg = """
            <svg class="chart" data-account="\(HTMLText.escaped(account.rawValue))" data-window="\(kind.rawValue)" \
            data-points="\(series.points.count)" xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" role="img" aria-label="\(HTMLText.escaped(account.rawValue)) \(kind.label) window">

            """
        for level in [0.0, 50, 100] {
            svg += "<line class=\"grid\" x1=\"\(format(left))\" x2=\"\(format(width - 4))\" y1=\"\(y(level))\" y2=\"\(y(level))\"/>"
            svg += "<text x=\"2\" y=\"\(format(top(level) + 3))\">\(Int(level)) %</text>\n"
        }
        for tick in axis.ticks {
            svg +=
                "<line class=\"tick\" x1=\"\(x(tick.date.timeIntervalSince1970))\" x2=\"\(x(tick.date.timeIntervalSince1970))\" y1=\"4\" y2=\"\(format(height - bottom))\"/>"
            svg +=
                "<text class=\"tick\" x=\"\(x(tick.date.timeIntervalSince1970))\" y=\"\(format(height - bottom + 11))\" text-anchor=\"middle\">\(HTMLText.escaped(tick.label))</text>\n"
        }
        svg += "<text x=\"\(format(left))\" y=\"\(format(height - 4))\">\(HTMLText.escaped(formatter.string(from: start)))</text>"
        svg +=
            "<text x=\"\(format(width - 4))\" y=\"\(format(height - 4))\" text-anchor=\"end\">\(HTMLText.escaped(formatter.string(from: end)))</text>\n"
        for reset in series.resets {
            svg +=
                "<line class=\"reset\" x1=\"\(x(reset))\" x2=\"\(x(reset))\" y1=\"4\" y2=\"\(format(height - bottom))\"><title>reset</title></line>\n"
        }
        if !series.points.isEmpty {
            svg += "<polyline class=\"use\" points=\""
            for (index, point) in series.points.enumerated() {
                if index > 0 { svg += " " }
                svg += x(point.time)
                svg += ","
                svg += y(point.used)
            }
            svg += "\"/>\n"
            // A dot with its time and value (on hover) for each reading while they are 3 px apart on
            // average; past that the dots would merge, and the line's vertices are the readings.
            if Double(series.points.count) <= (width - left - 4) / 3 {
                for point in series.points {
                    svg +=
                        "<circle class=\"point\" cx=\"\(x(point.time))\" cy=\"\(y(point.used))\" r=\"1.8\"><title>\(HTMLText.escaped(formatter.string(from: Date(timeIntervalSince1970: point.time)))): \(format(point.used)) %</title></circle>\n"
                }
            }
        } else {
            svg += "<text x=\"\(format(width / 2))\" y=\"\(format(height / 2))\" text-anchor=\"middle\">no readings</text>\n"
        }
        return svg + "</svg>"
    }

    /// A number with at most one decimal (`42`, `42.5`, `-0.3`); anything not finite is `0`. In
    /// whole tenths, so that a chart of a million readings is written quickly.
    static func format(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 1e15 else { return "0" }
        let tenths = Int((value * 10).rounded())
        let magnitude = tenths.magnitude
        let text = magnitude % 10 == 0 ? String(magnitude / 10) : "\(magnitude / 10).\(magnitude % 10)"
        return tenths < 0 ? "-" + text : text
    }
}

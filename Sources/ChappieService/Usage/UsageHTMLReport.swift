public import ChappieCore
public import Foundation

/// `chappie usage report --format html`: one self-contained page (no script, no external asset)
/// with each account's 5-hour and weekly windows over the period as inline SVG: one point per
/// stored reading, a dashed line where the window reset.
///
/// Every chart is `<svg class="chart" data-account="NAME" data-window="5h|weekly" data-points="N">`.
/// The page is well-formed XML (XHTML syntax), so any XML parser reads it. It holds account names,
/// e-mails, plans and readings, never a token.
public enum UsageHTMLReport {
    /// One window of one account, as drawn.
    struct Series {
        var points: [(date: Date, used: Double)] = []
        var resets: [Date] = []
    }

    /// The page.
    ///
    /// - Parameters:
    ///   - accounts: The accounts, in the order shown.
    ///   - samples: Each account's readings by account id, oldest first.
    ///   - since: The period's start (else the first reading's time); `until` its end (else `now`).
    ///   - timeZone: How times are written.
    public static func render(
        accounts: [Account], samples: [Int64: [UsageSample]], since: Date?, until: Date?, timeZone: TimeZone, now: Date = Date()
    ) -> String {
        let formatter = minuteFormatter(timeZone)
        let all = accounts.flatMap { samples[$0.id] ?? [] }
        let start = since ?? all.map(\.observedAt).min() ?? now
        let end = until ?? now
        var body = """
            <h1>chappie usage</h1>
            <p class="period">\(escape(formatter.string(from: start))) to \(escape(formatter.string(from: end))) (\(escape(timeZone.identifier))), \
            \(accounts.count) account\(accounts.count == 1 ? "" : "s"), made \(escape(formatter.string(from: now)))</p>

            """
        for account in accounts {
            let readings = (samples[account.id] ?? []).filter { $0.limitID == "codex" }
            let latest = readings.last?.snapshot
            body += """
                <section class="account">
                <h2>\(escape(account.name.rawValue))</h2>
                <p class="who">\(escape(account.info.email ?? "no e-mail")), \(escape(account.info.plan?.rawValue ?? "no plan")), \
                \(escape(account.status.rawValue))\(account.isActive ? ", active" : "")</p>

                """
            for kind in [ChappieUsageWindow.Kind.fiveHour, .weekly] {
                let series = Self.series(readings, kind)
                let now = kind == .fiveHour ? latest?.shortWindow : latest?.longWindow
                let caption = (kind == .fiveHour ? "5-hour window" : "weekly window")
                    + (now.map { ", now \(format($0.usedPercent)) %" + ($0.resetsAt.map { ", resets \(formatter.string(from: $0))" } ?? "") } ?? "")
                body += "<figure>\n<figcaption>\(escape(caption))</figcaption>\n"
                body += chart(series, account: account.name, kind: kind, start: start, end: end, formatter: formatter) + "\n</figure>\n"
            }
            body += "</section>\n"
        }
        return document(title: "chappie usage", style: """
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
        <title>\(escape(title))</title>
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
        \(style)
        </style>
        </head>
        <body>
        \(body)</body>
        </html>

        """
    }

    /// Times to the minute, `2026-11-24 08:00`, in a zone.
    static func minuteFormatter(_ timeZone: TimeZone) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter
    }

    /// An account's readings of one window, and where it reset.
    static func series(_ readings: [UsageSample], _ kind: ChappieUsageWindow.Kind) -> Series {
        var series = Series()
        var previous: Date?
        for reading in readings {
            guard let window = kind == .fiveHour ? reading.snapshot.shortWindow : reading.snapshot.longWindow else { continue }
            series.points.append((reading.observedAt, min(100, max(0, window.usedPercent))))
            if let resetsAt = window.resetsAt {
                if let previous, previous != resetsAt { series.resets.append(reading.observedAt) }
                previous = resetsAt
            }
        }
        return series
    }

    /// Where the time axis is marked, and how: every 1, 2, 3, 6 or 12 hours of the zone's clock for
    /// a short period (`14:00`, a midnight as `Tue 24`), else every so many days at local midnight
    /// (`Tue 24` a day apart, `Nov 24` further): about seven marks, eight at most.
    static func ticks(from start: Date, to end: Date, timeZone: TimeZone) -> [(date: Date, label: String)] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        func formatter(_ format: String) -> DateFormatter {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = timeZone
            formatter.dateFormat = format
            return formatter
        }
        let span = end.timeIntervalSince(start)
        guard span > 0 else { return [] }
        let day = formatter("EEE d")
        var ticks: [(date: Date, label: String)] = []
        if let hours = [1, 2, 3, 6, 12].first(where: { span / Double($0 * 3600) <= 7.5 }) {
            let clock = formatter("HH:mm")
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
        let label = days == 1 ? day : formatter("MMM d")
        var date = calendar.startOfDay(for: start)
        if date < start { date = calendar.date(byAdding: .day, value: 1, to: date) ?? end }
        while date <= end {
            ticks.append((date, label.string(from: date)))
            guard let next = calendar.date(byAdding: .day, value: days, to: date) else { break }
            date = next
        }
        return ticks
    }

    /// One chart: 0–100 % up, the period across (marked by ``ticks(from:to:timeZone:)``), a point
    /// per reading joined by a line (a vertex each, and a dot each while there is room for them).
    static func chart(_ series: Series, account: AccountName, kind: ChappieUsageWindow.Kind, start: Date, end: Date, formatter: DateFormatter) -> String {
        let (width, height, left, bottom) = (480.0, 174.0, 34.0, 30.0)
        let span = max(end.timeIntervalSince(start), 1)
        func x(_ date: Date) -> String { format(left + (width - left - 4) * min(1, max(0, date.timeIntervalSince(start) / span))) }
        func top(_ used: Double) -> Double { 4 + (height - bottom - 4) * (1 - used / 100) }
        func y(_ used: Double) -> String { format(top(used)) }
        var svg = """
            <svg class="chart" data-account="\(escape(account.rawValue))" data-window="\(kind == .fiveHour ? "5h" : "weekly")" \
            data-points="\(series.points.count)" xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" role="img" aria-label="\(escape(account.rawValue)) \(kind == .fiveHour ? "5-hour" : "weekly") window">

            """
        for level in [0.0, 50, 100] {
            svg += "<line class=\"grid\" x1=\"\(format(left))\" x2=\"\(format(width - 4))\" y1=\"\(y(level))\" y2=\"\(y(level))\"/>"
            svg += "<text x=\"2\" y=\"\(format(top(level) + 3))\">\(Int(level)) %</text>\n"
        }
        for tick in ticks(from: start, to: end, timeZone: formatter.timeZone) {
            svg += "<line class=\"tick\" x1=\"\(x(tick.date))\" x2=\"\(x(tick.date))\" y1=\"4\" y2=\"\(format(height - bottom))\"/>"
            svg += "<text class=\"tick\" x=\"\(x(tick.date))\" y=\"\(format(height - bottom + 11))\" text-anchor=\"middle\">\(escape(tick.label))</text>\n"
        }
        svg += "<text x=\"\(format(left))\" y=\"\(format(height - 4))\">\(escape(formatter.string(from: start)))</text>"
        svg += "<text x=\"\(format(width - 4))\" y=\"\(format(height - 4))\" text-anchor=\"end\">\(escape(formatter.string(from: end)))</text>\n"
        for reset in series.resets {
            svg += "<line class=\"reset\" x1=\"\(x(reset))\" x2=\"\(x(reset))\" y1=\"4\" y2=\"\(format(height - bottom))\"><title>reset</title></line>\n"
        }
        if !series.points.isEmpty {
            svg += "<polyline class=\"use\" points=\"\(series.points.map { "\(x($0.date)),\(y($0.used))" }.joined(separator: " "))\"/>\n"
            // A dot with its time and value (on hover) for each reading while they are 3 px apart on
            // average; past that the dots would merge, and the line's vertices are the readings.
            if Double(series.points.count) <= (width - left - 4) / 3 {
                for point in series.points {
                    svg += "<circle class=\"point\" cx=\"\(x(point.date))\" cy=\"\(y(point.used))\" r=\"1.8\"><title>\(escape(formatter.string(from: point.date))): \(format(point.used)) %</title></circle>\n"
                }
            }
        } else {
            svg += "<text x=\"\(format(width / 2))\" y=\"\(format(height / 2))\" text-anchor=\"middle\">no readings</text>\n"
        }
        return svg + "</svg>"
    }

    /// Text made safe for HTML and XML: `&`, `<`, `>`, `"` and `'` escaped.
    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// A number with at most one decimal.
    static func format(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}

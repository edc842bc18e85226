import ChappieText
import ChappieCore
import Foundation

/// Tokens per day drawn as bars (an inline SVG, no script): the HTML report's `--tokens` section
/// and the dashboard's last 14 days.
enum TokenBars {
    /// A UTC day as the service counts tokens by it: `YYYY-MM-DD`.
    static let utcDay = Date.ISO8601FormatStyle().year().month().day()

    /// The days `first` to `last` (UTC, `YYYY-MM-DD`), oldest first: every day, with or without tokens.
    static func days(from first: String, to last: String) -> [String] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let format = utcDay
        guard let start = try? format.parse(first), let end = try? format.parse(last), start <= end else { return [] }
        var days: [String] = []
        var day = start
        while day <= end, days.count < 3660 {
            days.append(day.formatted(format))
            guard let next = calendar.date(byAdding: .day, value: 1, to: day) else { break }
            day = next
        }
        return days
    }

    /// One bar per day, scaled to the largest; each bar's title says its day and count.
    static func svg(_ tokens: [String: Int], days: [String], label: String) -> String {
        let (width, height, bottom) = (max(120, days.count * 14 + 8), 90.0, 16.0)
        let largest = max(1, tokens.values.max() ?? 0)
        var bars = ""
        for (index, day) in days.enumerated() {
            let count = tokens[day] ?? 0
            let barHeight = (height - bottom - 4) * Double(count) / Double(largest)
            let x = 4 + index * 14
            bars +=
                "<rect class=\"tokens\" x=\"\(x)\" y=\"\(format(height - bottom - barHeight))\" width=\"10\" height=\"\(format(barHeight))\">"
                + "<title>\(HTMLText.escaped(day)): \(count) tokens</title></rect>"
        }
        let first = days.first.map { HTMLText.escaped(String($0.dropFirst(5))) } ?? ""
        let last = days.last.map { HTMLText.escaped(String($0.dropFirst(5))) } ?? ""
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(Int(height))" role="img" aria-label="\(HTMLText.escaped(label))">\
            \(bars)<text x="4" y="\(Int(height) - 3)" font-size="10">\(first)</text>\
            <text x="\(width - 4)" y="\(Int(height) - 3)" font-size="10" text-anchor="end">\(last)</text></svg>
            """
    }

    /// "1.2 M", "340 k", "12".
    static func short(_ count: Int) -> String {
        if count >= 1_000_000 { return DecimalText.format(Double(count) / 1_000_000) + " M" }
        if count >= 10_000 { return String(count / 1000) + " k" }
        return String(count)
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}

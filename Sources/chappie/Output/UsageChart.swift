import ChappieCore
import ChappieService
import Foundation

/// A usage window drawn over time for a terminal (`chappie usage history NAME --chart`): one bar
/// per column, as high as the highest reading of its stretch of time (between readings, the last
/// one holds), with the window's resets marked under the axis.
///
/// ```
/// work: 5-hour window, used %  (2026-11-24 08:00 → 2026-11-24 14:00)
/// 100|
///    |          ▄█
///    |      ▂▄▆███
///  0 |▁▂▄▆██████████▁▂
///    +--------------^-
///     08:00            14:00
///     ^ = the window reset
/// ```
struct UsageChart: Sendable {
    /// How bars are drawn.
    enum Style: Sendable {
        /// Unicode block characters, eight levels a row.
        case unicode
        /// Plain ASCII (`NO_COLOR`, a dumb terminal): `#` for a filled cell, `.` for a part-filled one.
        case ascii
    }

    /// The window drawn.
    var window: ChappieUsageWindow.Kind
    /// The whole width, labels included (20 to 1000).
    var width: Int
    /// Rows of bars (2 to 100).
    var height: Int
    /// How bars are drawn.
    var style: Style
    /// How times are written.
    var timeZone: TimeZone

    /// A chart of one window; by default 8 rows high.
    init(window: ChappieUsageWindow.Kind, width: Int, height: Int = 8, style: Style, timeZone: TimeZone = .current) {
        self.window = window
        self.width = min(1000, max(20, width))
        self.height = min(100, max(2, height))
        self.style = style
        self.timeZone = timeZone
    }

    /// ASCII where `NO_COLOR` is set or the terminal is dumb; Unicode blocks otherwise.
    static func style(environment: [String: String] = ProcessInfo.processInfo.environment) -> Style {
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return .ascii }
        return environment["TERM"] == "dumb" ? .ascii : .unicode
    }

    /// The chart's lines, for the `codex` readings of `samples` (oldest first) that report the window.
    func lines(account: AccountName, samples: [UsageSample]) -> [String] {
        let points: [(date: Date, used: Double, resetsAt: Date?)] = samples.compactMap { sample in
            guard sample.limitID == "codex" else { return nil }
            let reading = window == .fiveHour ? sample.snapshot.shortWindow : sample.snapshot.longWindow
            return reading.map { (sample.observedAt, $0.usedPercent, $0.resetsAt) }
        }
        let name = window.label
        guard let first = points.first, let last = points.last else { return [String("\(account): \(name) window: no readings".prefix(width))] }
        let gutter = 4
        let columns = width - gutter
        let span = max(last.date.timeIntervalSince(first.date), 1)
        func column(_ date: Date) -> Int { min(columns - 1, Int(date.timeIntervalSince(first.date) / span * Double(columns - 1) + 0.5)) }

        // Each column's highest reading, and where a window began afresh.
        var peaks = [Double?](repeating: nil, count: columns)
        var resets = Set<Int>()
        var tracker = WindowResets()
        for point in points {
            let index = column(point.date)
            let used = min(100, max(0, point.used))
            peaks[index] = max(peaks[index] ?? 0, used)
            let time = point.date.timeIntervalSince1970
            if let reset = tracker.observe(time: time, used: used, resetsAt: point.resetsAt?.timeIntervalSince1970) {
                resets.insert(column(Date(timeIntervalSince1970: reset)))
            }
        }

        // Between two readings the earlier one holds (a step), so that sparse readings still draw an area.
        var held: Double?
        for index in peaks.indices {
            if let peak = peaks[index] { held = peak } else { peaks[index] = held }
        }

        let formatter = MinuteFormat.formatter(timeZone)
        let axisFormatter = MinuteFormat.formatter(timeZone, format: span >= 86400 ? "MM-dd HH:mm" : "HH:mm")
        let title = "\(account): \(name) window, used %"
        let dated = title + "  (\(formatter.string(from: first.date)) → \(formatter.string(from: last.date)))"
        var lines = [dated.count <= width ? dated : String(title.prefix(width))]
        let blocks: [Character] = style == .unicode ? [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"] : [" ", ".", ".", ".", ".", "#", "#", "#", "#"]
        for row in (0..<height).reversed() {
            let label = row == height - 1 ? "100|" : row == 0 ? "  0|" : "   |"
            let cells = peaks.map { peak -> Character in
                guard let peak else { return " " }
                // How much of this row the bar fills, in eighths.
                let filled = peak / 100 * Double(height) - Double(row)
                if filled >= 1 { return blocks[8] }
                if filled <= 0 { return " " }
                return blocks[max(1, Int((filled * 8).rounded(.down)))]
            }
            lines.append(label + String(cells).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression))
        }
        let (rule, mark) = style == .unicode ? ("─", "┴") : ("-", "^")
        lines.append("   +" + (0..<columns).map { resets.contains($0) ? mark : rule }.joined())
        let start = axisFormatter.string(from: first.date), end = axisFormatter.string(from: last.date)
        // Both times under the axis where they fit, else the first alone.
        lines.append(
            "    "
                + (start.count + 1 + end.count <= columns
                    ? start + String(repeating: " ", count: columns - start.count - end.count) + end
                    : String(start.prefix(columns))))
        if !resets.isEmpty {
            let legend = "    \(mark) = the window reset"
            lines.append(legend.count <= width ? legend : "\(mark) = reset")
        }
        return lines
    }
}

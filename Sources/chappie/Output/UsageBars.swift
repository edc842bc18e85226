import ChappieText
import ChappieCore
import ChappieService
import Foundation

/// A bar of `cells` cells (10 by default) for a percentage.
func usageBar(_ percent: Double, cells: Int = 10) -> String {
    let step = 100 / Double(cells)
    let filled = percent.isFinite ? Int(max(0, min(Double(cells), (percent / step).rounded()))) : 0
    return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: cells - filled) + "]"
}

/// "37 % [####......] resets 14:05 (in 2 h 10 min)".
func describeWindow(_ window: ChappieUsageWindow?) -> String {
    guard let window else { return "-" }
    let reset = window.resetsAt.map { " resets \(Formatting.localTime($0)) (\(Formatting.relative($0)))" } ?? ""
    return "\(UsageReport.Cell.number(window.usedPercent).text) % \(usageBar(window.usedPercent))\(reset)"
}

/// A window as the usage table shows it: the long form with the reset's time, the short one with
/// how long until it; marked full at 100 % or when the server says its limit is reached.
func windowCell(_ window: ChappieUsageWindow?, limitReached: Bool = false) -> TextTable.Cell {
    guard let window else { return "-" }
    let head = "\(UsageReport.Cell.number(window.usedPercent).text) % \(usageBar(window.usedPercent, cells: 5))"
    return TextTable.Cell(
        describeWindow(window), short: head + (window.resetsAt.map { " \(Formatting.relative($0))" } ?? ""),
        full: limitReached || window.usedPercent >= 100)
}

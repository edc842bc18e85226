import ChappieCore
import ChappieService
import Foundation

/// A bar of 10 cells for a percentage.
func usageBar(_ percent: Double) -> String {
    let filled = percent.isFinite ? Int(max(0, min(10, (percent / 10).rounded()))) : 0
    return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 10 - filled) + "]"
}

/// "37 % [####......] resets 14:05 (in 2 h 10 min)".
func describeWindow(_ window: ChappieUsageWindow?) -> String {
    guard let window else { return "-" }
    let reset = window.resetsAt.map { " resets \(Formatting.localTime($0)) (\(Formatting.relative($0)))" } ?? ""
    return "\(UsageReport.Cell.number(window.usedPercent).text) % \(usageBar(window.usedPercent))\(reset)"
}

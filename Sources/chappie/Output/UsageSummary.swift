import Foundation

/// Percentages as the tables show them.
enum UsageSummary {
    static func percent(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(format: "%.1f", value)
    }
}

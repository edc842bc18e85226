import Foundation

/// Percentages as the tables show them.
enum UsageSummary {
    static func percent(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }
}

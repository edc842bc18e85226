/// A time as people say it next to now: "just now", "in 5 h 10 min", "3 min ago". Tables, the
/// dashboard and messages write times so (the dashboard's script writes the same words in the
/// browser).
package enum RelativeTime {
    /// A time `seconds` from now (negative: in the past), rounded to the second.
    package static func describe(secondsFromNow: Double) -> String {
        let seconds = Int(secondsFromNow.rounded())
        if abs(seconds) < 2 { return "just now" }
        let magnitude = abs(seconds)
        let text =
            switch magnitude {
            case ..<60: "\(magnitude) s"
            case ..<3600: "\(magnitude / 60) min"
            case ..<86400: "\(magnitude / 3600) h \(magnitude % 3600 / 60) min"
            default: "\(magnitude / 86400) d \(magnitude % 86400 / 3600) h"
            }
        return seconds > 0 ? "in \(text)" : "\(text) ago"
    }
}

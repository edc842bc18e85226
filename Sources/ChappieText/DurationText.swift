/// Durations as people type them: `90` (seconds), `30s`, `5m`, `1h`, `2d`. The one rule for every
/// option and setting that takes a duration.
package enum DurationText {
    /// The rule, for error messages.
    package static let rule = "use seconds, or a number with s, m, h or d (5m, 1h)"

    /// The duration `text` names, or `nil` when it does not follow ``rule`` (negative, or 10 million
    /// units and more, are refused).
    package static func parse(_ text: String) -> Duration? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = digits.last, let multiplier = units[last] {
            unit = multiplier
            digits = digits.dropLast()
        }
        guard let value = Int64(digits), value >= 0, value < 10_000_000 else { return nil }
        return .seconds(value * unit)
    }

    /// A duration in the largest unit that divides it: `30d`, `12h`, `5m`, `90s`.
    package static func format(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        for (unit, size) in [("d", Int64(86400)), ("h", 3600), ("m", 60)] where seconds != 0 && seconds % size == 0 {
            return "\(seconds / size)\(unit)"
        }
        return "\(seconds)s"
    }
}

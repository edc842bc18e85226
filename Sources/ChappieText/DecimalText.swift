/// Numbers as tables and reports show them: at most two decimals, no trailing zeros.
package enum DecimalText {
    /// `12`, `12.5`, `12.35` for 12.345; a value no reading could give (infinite, 10¹⁵ and more)
    /// prints rather than traps.
    package static func format(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 1e15 else { return value.isFinite ? "\(value)" : "0" }
        let hundredths = Int((value * 100).rounded())
        let whole = hundredths / 100, fraction = abs(hundredths % 100)
        guard fraction != 0 else { return String(whole) }
        let sign = hundredths < 0 && whole == 0 ? "-" : ""
        var digits = fraction < 10 ? "0\(fraction)" : "\(fraction)"
        if digits.hasSuffix("0") { digits.removeLast() }
        return "\(sign)\(whole).\(digits)"
    }
}

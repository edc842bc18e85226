package import Foundation

/// Numbers from outside chappie (JWT claims, the service's replies, `auth.json`, backups), checked
/// where they come in. A value that is not finite or is far out of range would otherwise trap an
/// integer conversion (a crash) or become a date the store writes but cannot read back (an account
/// lost to one bad claim). Values whose meaning is plain are clamped; the rest are unknown (`nil`).
package enum WireNumber {
    /// The latest instant accepted, 9999-12-31T23:59:59Z: the last one a four-digit year (SQLite's
    /// and ISO 8601's date text) can write.
    package static let latestUnixSeconds: Double = 253_402_300_799

    /// The longest window or lifetime length accepted, in seconds: ten years.
    package static let longestSeconds = 315_360_000

    /// A JSON number (`NSNumber` from `JSONSerialization`), when finite; `true` and `false` are
    /// not numbers (Foundation would read them as 1 and 0).
    package static func double(_ value: Any?) -> Double? {
        guard let number = value as? NSNumber, !isBoolean(number), number.doubleValue.isFinite else { return nil }
        return number.doubleValue
    }

    /// Whether `JSONSerialization` made this number from `true` or `false`.
    static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }

    /// A Unix time in seconds as a date, or `nil` unless it is finite and between 1970 and 9999.
    package static func date(unixSeconds seconds: Double) -> Date? {
        guard seconds.isFinite, seconds >= 0, seconds <= latestUnixSeconds else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    /// An ISO 8601 (RFC 3339) time, with or without fractional seconds, as a date; `nil` unless it
    /// reads and is between 1970 and 9999 (Foundation reads a five-digit year).
    package static func date(iso8601 text: String) -> Date? {
        let date = (try? Date(text, strategy: .iso8601)) ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        return date.flatMap { self.date(unixSeconds: $0.timeIntervalSince1970) }
    }

    /// A JSON number of Unix seconds as a date (``date(unixSeconds:)``).
    package static func date(_ value: Any?) -> Date? {
        double(value).flatMap(date(unixSeconds:))
    }

    /// A whole number within `range`, from a finite double (its fraction dropped), or `nil`.
    package static func integer(_ value: Double, in range: ClosedRange<Int>) -> Int? {
        guard value.isFinite, value >= Double(range.lowerBound), value <= Double(range.upperBound) else { return nil }
        return Int(value.rounded(.towardZero))
    }

    /// A JSON number (or a decimal string, as some fields are sent) as a whole number within `range`.
    package static func integer(_ value: Any?, in range: ClosedRange<Int>) -> Int? {
        if let text = value as? String { return Double(text.trimmingCharacters(in: .whitespaces)).flatMap { integer($0, in: range) } }
        return double(value).flatMap { integer($0, in: range) }
    }

    /// A use percentage, clamped to 0–100 (the service's range); `nil` when not a finite number.
    package static func percent(_ value: Double) -> Double? {
        value.isFinite ? min(100, max(0, value)) : nil
    }

    /// A JSON number as a use percentage (``percent(_:)-(Double)``).
    package static func percent(_ value: Any?) -> Double? {
        double(value).flatMap(percent)
    }
}

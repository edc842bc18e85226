package import Foundation

/// Times to the minute, as the charts and reports write them: in a given time zone, with a fixed
/// (POSIX) locale, so that the text is the same on every machine.
package enum MinuteFormat {
    /// A formatter for `format` (default `yyyy-MM-dd HH:mm`) in `timeZone`.
    package static func formatter(_ timeZone: TimeZone, format: String = "yyyy-MM-dd HH:mm") -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = format
        return formatter
    }
}

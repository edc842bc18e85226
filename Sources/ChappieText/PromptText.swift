import Glibc

/// The line of `chappie prompt` from plain values, so that the front binary (reading the daemon)
/// and the full binary (`PromptLine`, reading any source) build it with one code.
///
/// A format is text with placeholders: `{account}`, `{window}` (`5h` or `wk`, the binding window),
/// `{used}` and `{left}` (whole percent of it), `{reset}` (its reset, local `HH:mm`, or `EEE HH:mm`
/// more than a day away), `{plan}`. A word (text between spaces) whose placeholder has no value is
/// left out: without a reading the default format is `work`.
package enum PromptText {
    /// `{account} {window} {used}% ↻{reset}`.
    package static let defaultFormat = "{account} {window} {used}% ↻{reset}"
    /// The placeholders a format may use.
    package static let placeholders = ["account", "window", "used", "left", "reset", "plan"]

    /// The binding window of the account's newest reading.
    package struct Window: Sendable {
        /// Whether it is the short (5-hour) window.
        package var isShort: Bool
        /// Its use, 0–100.
        package var usedPercent: Double
        /// When it resets, in seconds since 1970.
        package var resetsAt: Double?

        package init(isShort: Bool, usedPercent: Double, resetsAt: Double?) {
            self.isShort = isShort
            self.usedPercent = usedPercent
            self.resetsAt = resetsAt
        }
    }

    /// Why a format cannot be used (an unknown placeholder, an unclosed brace), or `nil`.
    package static func problem(with format: String) -> String? {
        var rest = Substring(format)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else { return "the format has a { without its }" }
            let name = String(rest[rest.index(after: open)..<close])
            guard placeholders.contains(name) else {
                return "the format names {\(name)}; it may use " + placeholders.map { "{\($0)}" }.joined(separator: ", ")
            }
            rest = rest[rest.index(after: close)...]
        }
        return nil
    }

    /// The line for an account (its plan's display name, its reserve) and the binding window of its
    /// newest reading, at `now` (seconds since 1970). A window whose reset has passed is shown as
    /// started afresh. `clock` writes a reset time, with its day when `withDay`.
    package static func render(
        _ format: String, account: String, plan: String?, reserve: Double?, window: Window?, now: Double,
        clock: (_ seconds: Double, _ withDay: Bool) -> String
    ) -> String {
        var values: [String: String] = ["account": account, "plan": plan ?? ""]
        if let window {
            let over = window.resetsAt.map { $0 <= now } ?? false
            let used = over ? 0 : min(max(window.usedPercent, 0), 100)
            values["window"] = window.isShort ? "5h" : "wk"
            values["used"] = wholePercent(used)
            // Headroom counts the account's reserve, as guard and --best do.
            values["left"] = wholePercent(max(0, (reserve ?? 100) - used))
            if let resets = window.resetsAt, !over {
                // A reset more than a day away names its day.
                values["reset"] = clock(resets, resets - now > 86_400)
            }
        }
        // Word by word: a word with a placeholder that has no value (no reading, no reset) is left
        // out, so `{used}% ↻{reset}` without a reset time is `42%`.
        let words = format.split(separator: " ", omittingEmptySubsequences: false).compactMap { word -> String? in
            var line = ""
            var rest = Substring(word)
            while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
                guard let value = values[String(rest[rest.index(after: open)..<close])], !value.isEmpty else { return nil }
                line += rest[..<open] + value
                rest = rest[rest.index(after: close)...]
            }
            return line + rest
        }
        return TerminalText.sanitized(trimmingSpaces(words.joined(separator: " ")))
    }

    /// A percentage rounded to a whole number; nothing for one no `Int` holds (a reserve edited
    /// into the store by hand).
    static func wholePercent(_ value: Double) -> String {
        let rounded = value.rounded()
        guard rounded.isFinite, rounded.magnitude < 0x1p62 else { return "" }
        return String(Int(rounded))
    }

    /// `text` without the spaces at its ends: the set Foundation calls `whitespaces` (the tab,
    /// Unicode's space separators, and the zero-width space), scalar by scalar as it trims.
    package static func trimmingSpaces(_ text: String) -> String {
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "\t" || scalar == "\u{200B}" || scalar.properties.generalCategory == .spaceSeparator
        }
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }), let last = scalars.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(scalars[first...last])
    }

    /// Whether the C library and Foundation name the same local time zone, so that ``localClock``
    /// writes the reset time Foundation writes: `TZ` a zone name (`Area/City`, `UTC`, `GMT`), or
    /// unset with `/etc/localtime` a link into a `zoneinfo` directory; and no `TZFILE`. Foundation
    /// reads abbreviations (`EST`), POSIX rules (`JST-9`), `:`-paths and a copied `/etc/localtime`
    /// otherwise than the C library does.
    package static func zoneIsNamedAlike(_ environment: (String) -> String?) -> Bool {
        guard environment("TZFILE") == nil else { return false }
        if let zone = environment("TZ") {
            let bytes = Array(zone.utf8)
            let plain = bytes.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                    true
                default: false
                }
            }
            // A name the C library finds in its zone files, outside the `posix/` and `right/` copies
            // Foundation does not know.
            let named =
                plain && bytes.first != UInt8(ascii: "/") && !zone.contains("..") && !zone.contains("//") && !zone.hasSuffix("/")
                && !zone.hasPrefix("posix/") && !zone.hasPrefix("right/")
            guard named, zone.contains("/") || zone == "UTC" || zone == "GMT", environment("TZDIR") == nil else { return false }
            var info = stat()
            return stat("/usr/share/zoneinfo/" + zone, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
        }
        var target = [CChar](repeating: 0, count: 4096)
        let count = readlink("/etc/localtime", &target, target.count - 1)
        guard count > 0 else { return false }
        return String(decoding: target[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self).contains("/zoneinfo/")
    }

    /// A reset time in the process's time zone (`TZ`, else `/etc/localtime`): `21:30`, or
    /// `Mon 21:30` with its day.
    package static func localClock(_ seconds: Double, withDay: Bool) -> String {
        var time = time_t(seconds.rounded(.down))
        var parts = tm()
        tzset()
        localtime_r(&time, &parts)
        func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let clock = "\(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min))"
        guard withDay else { return clock }
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        return days[Int(parts.tm_wday) % 7] + " " + clock
    }
}

import ChappieText
public import ChappieCore
public import Foundation

/// The one short line of `chappie prompt`, for shell prompts and status lines: `work 5h 42% ↻21:30`.
///
/// A format is text with placeholders: `{account}`, `{window}` (`5h` or `wk`, the binding window),
/// `{used}` and `{left}` (whole percent of it), `{reset}` (its reset, local `HH:mm`), `{plan}`.
/// A word (text between spaces) whose placeholder has no value (no reading yet, no reset time) is
/// left out: without a reading the default format is `work`.
///
/// ```swift
/// PromptLine.render(PromptLine.defaultFormat, account: account, reading: sample?.snapshot)
/// ```
public enum PromptLine {
    /// `{account} {window} {used}% ↻{reset}`.
    public static let defaultFormat = "{account} {window} {used}% ↻{reset}"
    /// The placeholders a format may use.
    public static let placeholders = ["account", "window", "used", "left", "reset", "plan"]

    /// Why a format cannot be used (an unknown placeholder, an unclosed brace), or `nil`.
    public static func problem(with format: String) -> String? {
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

    /// The line for an account and its newest reading (none: the account alone). A window whose
    /// reset has passed is shown as started afresh.
    public static func render(
        _ format: String, account: Account, reading: ChappieUsageLimitSnapshot?, timeZone: TimeZone = .current, now: Date = Date()
    ) -> String {
        var values: [String: String] = ["account": account.name.rawValue, "plan": account.info.plan?.displayName ?? ""]
        if let reading, let window = reading.bindingWindow {
            let over = window.resetsAt.map { $0 <= now } ?? false
            let used = over ? 0 : min(max(window.usedPercent, 0), 100)
            values["window"] = window == reading.shortWindow ? "5h" : "wk"
            values["used"] = String(Int(used.rounded()))
            // Headroom counts the account's reserve, as guard and --best do.
            values["left"] = String(Int(max(0, (account.reservePercent ?? 100) - used).rounded()))
            if let resets = window.resetsAt, !over {
                // A reset more than a day away names its day.
                let format = resets.timeIntervalSince(now) > 86_400 ? "EEE HH:mm" : "HH:mm"
                values["reset"] = MinuteFormat.formatter(timeZone, format: format).string(from: resets)
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
        let line = words.joined(separator: " ")
        return TerminalText.sanitized(line.trimmingCharacters(in: .whitespaces))
    }
}

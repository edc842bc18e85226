public import ChappieCore
public import Foundation

/// The one short line of `chappie prompt`, for shell prompts and status lines: `work 5h 42% ↻21:30`.
///
/// A format is text with placeholders: `{account}`, `{window}` (`5h` or `wk`, the binding window),
/// `{used}` and `{left}` (whole percent of it), `{reset}` (its reset, local `HH:mm`), `{plan}`.
/// When a placeholder has no value (no reading yet, no reset time), the line is the values there
/// are, separated by spaces: the default format becomes `work`.
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

    /// The line for an account and its newest reading (none: the account alone).
    public static func render(
        _ format: String, account: Account, reading: ChappieUsageLimitSnapshot?, timeZone: TimeZone = .current
    ) -> String {
        var values: [String: String] = ["account": account.name.rawValue, "plan": account.info.plan?.displayName ?? ""]
        if let reading, let window = reading.bindingWindow {
            values["window"] = window == reading.shortWindow ? "5h" : "wk"
            values["used"] = String(Int(min(max(window.usedPercent, 0), 100).rounded()))
            values["left"] = String(Int(min(max(100 - window.usedPercent, 0), 100).rounded()))
            if let resets = window.resetsAt {
                let formatter = MinuteFormat.formatter(timeZone, format: "HH:mm")
                values["reset"] = formatter.string(from: resets)
            }
        }
        var line = ""
        var present: [String] = []
        var complete = true
        var rest = Substring(format)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            let value = values[String(rest[rest.index(after: open)..<close])] ?? ""
            line += rest[..<open] + value
            if value.isEmpty { complete = false } else { present.append(value) }
            rest = rest[rest.index(after: close)...]
        }
        line += rest
        // A placeholder with no value (no reading yet): the values there are, without the format's
        // text around the missing ones.
        if !complete { line = present.joined(separator: " ") }
        return TerminalText.sanitized(line.trimmingCharacters(in: .whitespaces))
    }
}

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
    public static let defaultFormat = PromptText.defaultFormat

    /// Why a format cannot be used (an unknown placeholder, an unclosed brace), or `nil`.
    public static func problem(with format: String) -> String? {
        PromptText.problem(with: format)
    }

    /// The line for an account and its newest reading (none: the account alone). A window whose
    /// reset has passed is shown as started afresh.
    public static func render(
        _ format: String, account: Account, reading: ChappieUsageLimitSnapshot?, timeZone: TimeZone = .current, now: Date = Date()
    ) -> String {
        let window = reading?.bindingWindow.map { window in
            PromptText.Window(
                isShort: window == reading?.shortWindow, usedPercent: window.usedPercent, resetsAt: window.resetsAt?.timeIntervalSince1970)
        }
        return PromptText.render(
            format, account: account.name.rawValue, plan: account.info.plan?.displayName, reserve: account.reservePercent, window: window,
            now: now.timeIntervalSince1970
        ) { seconds, withDay in
            MinuteFormat.formatter(timeZone, format: withDay ? "EEE HH:mm" : "HH:mm").string(from: Date(timeIntervalSince1970: seconds))
        }
    }
}

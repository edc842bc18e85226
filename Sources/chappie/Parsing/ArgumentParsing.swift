import ChappieText
public import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

/// An account name argument, checked against ``AccountName/rule`` (a usage error otherwise).
func parseAccountName(_ text: String) throws -> AccountName {
    do {
        return try AccountName(text)
    } catch {
        throw ValidationError(error.description)
    }
}

/// A duration argument (``DurationText``; a usage error otherwise).
func parseDuration(_ text: String) throws -> Duration {
    guard let duration = DurationText.parse(text) else { throw ValidationError("\"\(text)\" is not a duration: \(DurationText.rule)") }
    return duration
}

/// A path typed by the user (`~` expanded) as a file URL.
func expandedPath(_ text: String) -> URL {
    URL(fileURLWithPath: (text as NSString).expandingTildeInPath)
}

extension SettingsService.Key: ExpressibleByArgument {}
extension ShellHook.Shell: ExpressibleByArgument {}

/// A time given as ISO 8601 (`2026-11-01`, `2026-11-01T08:00`, with or without offset, read in
/// `timeZone` when it has none) or as an age (`7d`, `12h`: that long ago).
func parseTime(_ text: String, timeZone: TimeZone, now: Date = Date()) throws -> Date {
    if let age = try? parseDuration(text), text.last.map({ "smhd".contains($0) }) == true {
        return now.addingTimeInterval(-Double(age.components.seconds))
    }
    for format in ["yyyy-MM-dd'T'HH:mm:ssXXXXX", "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd'T'HH:mmXXXXX", "yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd"] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = format
        // A year past 9999 is no time a store holds (and would compare as text wrongly).
        if let date = formatter.date(from: text), WireNumber.date(unixSeconds: date.timeIntervalSince1970) != nil { return date }
    }
    throw ValidationError("\"\(text)\" is not a time: use 2026-11-01, 2026-11-01T08:00, 2026-11-01T08:00:00+01:00, or an age such as 7d")
}

/// The named time zone, or the system's.
func timeZone(_ name: String?) throws -> TimeZone {
    guard let name else { return .current }
    guard let zone = TimeZone(identifier: name) else {
        throw ValidationError("\"\(name)\" is not a time zone: use a name such as Europe/Paris, America/New_York or UTC")
    }
    return zone
}

extension CompletionKind {
    /// The stored accounts' names, read without unlocking the store; `--home` on the line typed so
    /// far picks the store, as it does for the command.
    static var accountNames: CompletionKind {
        .custom { words, _, prefix in
            var home: String?
            for (index, word) in words.enumerated() {
                if word == "--home", index + 1 < words.count { home = words[index + 1] }
                if word.hasPrefix("--home=") { home = String(word.dropFirst("--home=".count)) }
            }
            return AccountsService.namesWithoutUnlocking(home: home.map { ($0 as NSString).expandingTildeInPath }).filter { $0.hasPrefix(prefix) }
        }
    }
}

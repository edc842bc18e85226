import ChappieText
import ChappieCore
import ChappieService
import ChappieSystem
import Foundation

/// How dates and durations are shown in tables.
enum Formatting {
    /// "in 3 d 2 h", "in 5 h 10 min", "2 h 0 min ago" relative to now (``RelativeTime``).
    static func relative(_ date: Date, now: Date = Date()) -> String {
        RelativeTime.describe(date, now: now)
    }

    /// `2026-11-21 14:05` in local time.
    static func localTime(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&time, &parts)
        return String(format: "%04d-%02d-%02d %02d:%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min)
    }

    /// A JSON encoder with sorted keys and ISO 8601 dates.
    static func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    /// Says what a renewal did to the Codex home the account owns.
    static func reportRenewal(_ renewal: CodexHomeRenewal?, of account: Account) {
        switch renewal {
        case .wrote(let file)?: print("Codex's login in \(file.path) has \(account.name)'s new tokens.")
        case .leftAlone(let why)?:
            StandardStream.error.write("warning: \(TerminalText.sanitized(why)); chappie accounts switch \(account.name) writes it\n")
        case nil: break
        }
    }

    /// The warning for a switch under a running Codex: what it will do, and what to do instead.
    static func runningCodexWarning(_ outcome: AccountsService.SwitchOutcome, home: URL) -> String {
        let pids = outcome.codexProcesses.map(String.init).joined(separator: ", ")
        let old = outcome.previousOwner.map { "\($0)'s tokens" } ?? "the login it started with"
        return
            "warning: Codex is running in \(home.path) (pid \(pids)): it keeps \(old) until it exits, and at its next refresh stops asking you to sign in again. Do not sign in: restart it to run as \(outcome.account.name). A long job goes on across accounts under chappie exec --failover (see chappie exec --help)."
    }

    /// A Codex home as a table shows it: `~` for the home directory; `short` says `private` for
    /// one of `chappie exec`'s private homes.
    static func codexHome(_ path: String?) -> TextTable.Cell {
        guard let path else { return TextTable.Cell("-") }
        let home = ProcessInfo.processInfo.environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let shown = CodexHomePath.shown(path, home: home)
        return TextTable.Cell(shown, short: ExecService.isPrivateCodexHome(URL(fileURLWithPath: path)) ? "private" : shown)
    }
}

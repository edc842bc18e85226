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

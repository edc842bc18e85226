import ArgumentParser
import Foundation

/// `--since`, `--until` and `--tz`: the period a usage command covers, and the time zone its
/// times are read and shown in. One group, so that every command reads them alike.
struct TimeRangeOptions: ParsableArguments {
    @Option(help: "From this time (2026-11-01, 2026-11-01T08:00, or an age like 7d).") var since: String?
    @Option(help: "Up to this time (excluded).") var until: String?
    @Option(help: "The time zone of times given and shown, and of periods, such as Europe/Paris (default: the system's).") var tz: String?

    /// The time zone (`--tz`, else the system's).
    func zone() throws -> TimeZone {
        try timeZone(tz)
    }

    /// The period, read in ``zone()``.
    func period() throws -> (since: Date?, until: Date?) {
        let zone = try zone()
        return (try since.map { try parseTime($0, timeZone: zone) }, try until.map { try parseTime($0, timeZone: zone) })
    }
}

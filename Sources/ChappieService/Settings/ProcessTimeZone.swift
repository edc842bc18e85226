public import Foundation

/// The process's time zone, made safe for Foundation before anything reads it.
public enum ProcessTimeZone {
    /// Foundation stops the process (SIGILL) at `TimeZone.current` when `TZ` names a zone its own
    /// data knows but the system has no file for (`ACT`, `AET`, `SystemV/EST5`): every command that
    /// shows a local time would crash, and `prompt` would break a shell prompt. For such a `TZ`,
    /// Foundation's current zone is fixed at UTC (how the C library reads a zone it has no file
    /// for), and `TZ` itself is left as it was, for the C library and for the programs chappie
    /// starts. Returns the zone that would have crashed, if one did.
    @discardableResult
    public static func settle(zoneFiles: String = "/usr/share/zoneinfo") -> String? {
        // Foundation reads TZFILE first; an offset name (`GMT+5`) it parses itself, with no file.
        guard getenv("TZFILE") == nil, let zone = getenv("TZ").map({ String(cString: $0) }), !zone.isEmpty, !zone.hasPrefix(":"),
            !zone.hasPrefix("/"),
            !zone.hasPrefix("GMT"), !zone.hasPrefix("UTC")
        else { return nil }
        // As Foundation resolves it: an abbreviation (`PST`) by its table, then the identifier.
        let named = TimeZone.abbreviationDictionary[zone] ?? zone
        // The file first: a zone with one (nearly every TZ) costs no lookup in Foundation's data.
        guard !named.split(separator: "/").contains(where: { $0 == ".." }), !FileManager.default.fileExists(atPath: zoneFiles + "/" + named),
            TimeZone(identifier: named) != nil
        else { return nil }
        // Foundation keeps the current zone it first reads: read it once under UTC, then put TZ back.
        setenv("TZ", "UTC", 1)
        _ = TimeZone.current
        setenv("TZ", zone, 1)
        return zone
    }
}

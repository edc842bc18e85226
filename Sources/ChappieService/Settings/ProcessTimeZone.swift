public import Foundation

/// The process's time zone, made safe for Foundation before anything reads it.
public enum ProcessTimeZone {
    /// Foundation stops the process (SIGILL) at `TimeZone.current` when `TZ` names a zone its own
    /// data knows but the system has no file for (`ACT`, `AET`, `SystemV/EST5`): every command that
    /// shows a local time would crash, and `prompt` would break a shell prompt. The C library reads
    /// such a `TZ` as UTC; so does chappie then, by setting `TZ=UTC` for this process. Returns the
    /// zone replaced, if one was.
    @discardableResult
    public static func settle(zoneFiles: String = "/usr/share/zoneinfo") -> String? {
        guard let zone = ProcessInfo.processInfo.environment["TZ"], !zone.isEmpty, !zone.hasPrefix(":"), !zone.hasPrefix("/"),
            !zone.split(separator: "/").contains(where: { $0 == ".." }),
            !FileManager.default.fileExists(atPath: zoneFiles + "/" + zone), TimeZone(identifier: zone) != nil
        else { return nil }
        setenv("TZ", "UTC", 1)
        return zone
    }
}

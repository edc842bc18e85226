import Logging
import Synchronization

/// Every log line of this process, chappie's own and its libraries' (requests by host and path,
/// lock waits, refresh decisions), goes to standard error through one handler, at one level and in
/// one format: warnings as text by default, debug with `--verbose`, and for the daemon what its
/// `--log-level` and `--log-format` say.
enum ProcessLogging {
    /// The level and format every logger of the process follows.
    struct Settings: Sendable {
        /// The lowest level written.
        var level: Logger.Level
        /// One JSON object a line instead of text.
        var json: Bool
    }

    /// What the handlers read at each line.
    static let settings = Mutex(Settings(level: .warning, json: false))

    /// Makes every logger of the process, made before or after, write through ``ProcessLogHandler``.
    /// Called once, first thing in `main`.
    static func bootstrap(verbose: Bool) {
        settings.withLock { $0.level = verbose ? .debug : .warning }
        LoggingSystem.bootstrap { label in ProcessLogHandler(label: label) }
    }

    /// Changes the level and format for every logger of the process (the daemon's options).
    static func configure(level: Logger.Level, json: Bool) {
        settings.withLock { $0 = Settings(level: level, json: json) }
    }
}

/// A handler that follows ``ProcessLogging/settings``: text or JSON on standard error.
struct ProcessLogHandler: LogHandler {
    let label: String
    var metadata: Logger.Metadata = [:]

    /// The process's level; setting it on one logger changes nothing (one level for the process).
    var logLevel: Logger.Level {
        get { ProcessLogging.settings.withLock { $0.level } }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        if ProcessLogging.settings.withLock({ $0.json }) {
            JSONLogHandler(label: label, metadata: metadata).log(event: event)
        } else {
            var handler = StreamLogHandler.standardError(label: label)
            handler.metadata = metadata
            handler.logLevel = .trace
            handler.log(event: event)
        }
    }
}

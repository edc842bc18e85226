import Logging
import Synchronization

/// Every log line of this process, chappie's own and its libraries' (requests by host and path,
/// lock waits, refresh decisions), goes to standard error through one handler, at one level and in
/// one format: warnings as text by default, debug with `--verbose`, and for the daemon what its
/// `--log-level` and `--log-format` say.
enum ProcessLogging {
    /// The lowest level written (a `Logger.Level` by its position in `allCases`).
    fileprivate static let level = Atomic(Logger.Level.allCases.firstIndex(of: .warning) ?? 0)
    /// One JSON object a line instead of text.
    fileprivate static let json = Atomic(false)

    /// Makes every logger of the process, made before or after, write through ``ProcessLogHandler``.
    /// Called once, first thing in `main`.
    static func bootstrap(verbose: Bool) {
        configure(level: verbose ? .debug : .warning, json: false)
        LoggingSystem.bootstrap { label in ProcessLogHandler(label: label) }
    }

    /// Changes the level and format for every logger of the process (the daemon's options).
    static func configure(level: Logger.Level, json: Bool) {
        self.level.store(Logger.Level.allCases.firstIndex(of: level) ?? 0, ordering: .relaxed)
        self.json.store(json, ordering: .relaxed)
    }
}

/// A handler that follows ``ProcessLogging``'s level and format: text or JSON on standard error.
struct ProcessLogHandler: LogHandler {
    private var text: StreamLogHandler
    private var structured: JSONLogHandler

    init(label: String) {
        text = StreamLogHandler.standardError(label: label)
        text.logLevel = .trace
        structured = JSONLogHandler(label: label)
    }

    var metadata: Logger.Metadata {
        get { text.metadata }
        set {
            text.metadata = newValue
            structured.metadata = newValue
        }
    }

    /// The process's level; setting it on one logger changes nothing (one level for the process).
    var logLevel: Logger.Level {
        get { Logger.Level.allCases[ProcessLogging.level.load(ordering: .relaxed)] }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        if ProcessLogging.json.load(ordering: .relaxed) {
            structured.log(event: event)
        } else {
            text.log(event: event)
        }
    }
}

import Synchronization

/// An ordered record of what happened, shared by tasks: a test asserts the order of events.
public final class Log: Sendable {
    private let storage = Mutex<[String]>([])

    public init() {}

    public func append(_ entry: String) { storage.withLock { $0.append(entry) } }
    public var entries: [String] { storage.withLock { $0 } }
}

package import ChappieStore
import Foundation

/// The store's settings (`chappie config …`): each is kept in the store, changed in one transaction
/// with its audit entry.
public struct SettingsService: Sendable {
    /// The settings there are.
    public enum Key: String, Sendable, CaseIterable {
        /// The Codex home `switch` writes to when none is given.
        case codexHome = "codex-home"
        /// How long usage readings are kept.
        case usageRetention = "usage-retention"
    }

    /// The store.
    package let store: any StoreSettings

    /// Creates the service.
    package init(store: any StoreSettings) {
        self.store = store
    }

    /// The Codex home `switch` writes to when none is given.
    public func defaultCodexHome() async throws -> String? {
        try await store.defaultCodexHome()
    }

    /// Sets (or with `nil` clears) the default Codex home.
    public func setDefaultCodexHome(_ path: String?) async throws {
        try await store.setDefaultCodexHome(path)
    }

    /// How long usage readings are kept, when set.
    public func usageRetention() async throws -> Duration? {
        try await store.usageRetention().map { .seconds(Int64($0)) }
    }

    /// Sets (or with `nil` clears) how long usage readings are kept.
    public func setUsageRetention(_ retention: Duration?) async throws {
        try await store.setUsageRetention(retention.map { Double($0.components.seconds) })
    }
}

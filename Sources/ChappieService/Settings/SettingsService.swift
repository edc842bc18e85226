import Chappie
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
        /// The `originator` chappie's backend requests carry.
        case originator
        /// A PEM file of certificate authorities trusted besides the system's.
        case caFile = "ca-file"
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

    /// The `originator` set for chappie's backend requests, if any (else `chappie`).
    public func originator() async throws -> String? {
        try await store.trafficSetting(.originator)
    }

    /// Sets (or with `nil` clears) the `originator`: letters, digits, `_`, `-` and `.`, at most 64.
    public func setOriginator(_ value: String?) async throws {
        if let value {
            guard ChappieEndpoints.isValidOriginator(value) else {
                throw ServiceError(.invalidInput, "an originator is 1 to 64 letters, digits, '_', '-' or '.'")
            }
        }
        try await store.setTrafficSetting(.originator, value)
    }

    /// The certificate-authority file set to trust, if any.
    public func caFile() async throws -> String? {
        try await store.trafficSetting(.caFile)
    }

    /// Sets (or with `nil` clears) the certificate-authority file: an absolute path to a readable
    /// PEM file with at least one certificate, checked now so that a mistake shows at once.
    public func setCAFile(_ path: String?) async throws {
        if let path {
            guard path.hasPrefix("/"), let text = FileManager.default.contents(atPath: path).map({ String(decoding: $0, as: UTF8.self) }),
                text.contains("-----BEGIN CERTIFICATE-----")
            else {
                throw ServiceError(.invalidInput, "\(path) is not a readable PEM file of certificates (-----BEGIN CERTIFICATE-----)")
            }
        }
        try await store.setTrafficSetting(.caFile, path)
    }
}

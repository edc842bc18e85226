/// The store's own settings, shared by every machine that uses it.
package protocol StoreSettings: Sendable {
    /// The Codex home `switch` writes to when none is given.
    func defaultCodexHome() async throws(StoreError) -> String?
    /// Sets (or with `nil` clears) the default Codex home.
    func setDefaultCodexHome(_ path: String?) async throws(StoreError)
    /// How long usage readings are kept, in seconds, when set.
    func usageRetention() async throws(StoreError) -> Double?
    /// Sets (or with `nil` clears) how long usage readings are kept.
    func setUsageRetention(_ seconds: Double?) async throws(StoreError)
    /// A setting of chappie's traffic, when set.
    func trafficSetting(_ setting: TrafficSetting) async throws(StoreError) -> String?
    /// Sets (or with `nil` clears) a setting of chappie's traffic.
    func setTrafficSetting(_ setting: TrafficSetting, _ value: String?) async throws(StoreError)
}

/// Settings of how chappie talks to the services, kept as text.
package enum TrafficSetting: String, Sendable, CaseIterable {
    /// The `originator` chappie's backend requests name (default `chappie`).
    case originator
    /// A PEM file of certificate authorities trusted besides the system's.
    case caFile = "ca-file"

    /// Whether machines sharing a store each have their own (a path on the machine), as
    /// `codex-home` is; otherwise one value serves every machine.
    package var isPerMachine: Bool { self == .caFile }

    /// Its row in `settings`.
    package var key: SettingKey {
        switch self {
        case .originator: .originator
        case .caFile: .caFile
        }
    }
}

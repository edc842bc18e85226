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
}

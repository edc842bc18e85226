import Chappie
import ChappieNet
import ChappieText
package import ChappieStore
public import Foundation

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
        /// A PEM file of certificate authorities trusted besides the system's (this machine's only).
        case caFile = "ca-file"
        /// Webhooks the daemon sends alerts to (this machine's only, ``LocalSettings``).
        case alertWebhook = "alert-webhook"
        /// A command the daemon runs with each alert (this machine's only).
        case alertCommand = "alert-command"
        /// The thresholds of `threshold` alerts (this machine's only).
        case alertAt = "alert-at"

    }

    /// The store.
    package let store: any StoreSettings & AuditLog
    /// The data directory, where ``LocalSettings`` are kept.
    let directory: URL
    /// Whether the store is this machine's own database (not a team pool).
    let storeIsLocal: Bool

    /// Creates the service.
    package init(store: any StoreSettings & AuditLog, directory: URL, storeIsLocal: Bool) {
        self.store = store
        self.directory = directory
        self.storeIsLocal = storeIsLocal
    }

    /// This machine's settings.
    public func local() throws(ServiceError) -> LocalSettings {
        try LocalSettings.load(from: directory)
    }

    /// A local setting as output shows it: webhooks redacted, one per line.
    public func shown(_ key: Key) throws -> String? {
        let settings = try local()
        switch key {
        case .alertWebhook: return settings.alertWebhooks.map { $0.map(Self.redacted).joined(separator: "\n") }
        case .alertCommand: return settings.alertCommand
        case .alertAt: return settings.alertAt
        case .caFile: return settings.caFile
        default: return nil
        }
    }

    /// Sets (or with `nil` clears) a local setting, checked first; `alert-webhook` takes one or more
    /// URLs separated by blanks. Returns the value as output may show it (webhooks redacted).
    @discardableResult
    public func setLocal(_ key: Key, _ value: String?) async throws -> String? {
        var settings = try local()
        switch key {
        case .alertWebhook:
            let urls = value.map { $0.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).map(String.init) }
            for url in urls ?? [] { _ = try AlertTargets.webhook(url) }
            settings.alertWebhooks = urls?.isEmpty == true ? nil : urls
        case .alertCommand:
            if let value { _ = try AlertTargets.command(value) }
            settings.alertCommand = value
        case .alertAt:
            if let value { _ = try AlertTargets.thresholds(value) }
            settings.alertAt = value
        case .caFile:
            if let value { try Self.checkCAFile(value) }
            settings.caFile = value
        default:
            preconditionFailure("\(key.rawValue) is not a local setting")
        }
        try settings.save(in: directory)
        let shown = try self.shown(key)
        // The audit log may be a team pool's: the command, which may carry a secret, is not written there.
        let logged = key == .alertCommand ? shown.map { _ in "set" } : shown.map { "set to \($0.replacingOccurrences(of: "\n", with: " "))" }
        try? await store.recordEvent(.settingChanged, account: nil, detail: "\(key.rawValue) (this machine) " + (logged ?? "cleared"))
        return shown
    }

    private static func redacted(_ text: String) -> String {
        URL(string: text).map(AlertTargets.redacted) ?? "(not a URL)"
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

    /// The certificate-authority file set to trust on this machine, if any.
    public func caFile() async throws -> String? {
        Self.caFile(local: try local(), stored: storeIsLocal ? try await store.trafficSetting(.caFile) : nil, storeIsLocal: storeIsLocal)
    }

    /// The certificate-authority file this machine trusts as well: its own setting, else one an
    /// earlier chappie kept in this machine's own database; never a team pool's, which whoever
    /// writes the pool could set.
    static func caFile(local: LocalSettings, stored: String?, storeIsLocal: Bool) -> String? {
        local.caFile ?? (storeIsLocal ? stored : nil)
    }

    /// Sets (or with `nil` clears) this machine's certificate-authority file, checked now so that a
    /// mistake shows at once. One an earlier chappie kept in this machine's database moves here.
    public func setCAFile(_ path: String?) async throws {
        if storeIsLocal, try await store.trafficSetting(.caFile) != nil { try await store.setTrafficSetting(.caFile, nil) }
        try await setLocal(.caFile, path)
    }

    /// An absolute path to a readable PEM file with at least one certificate, which no other user
    /// can change (nor any directory on the way to it): the check every use makes too.
    static func checkCAFile(_ path: String) throws {
        guard path.hasPrefix("/") else { throw ServiceError(.invalidInput, "\(path) is not an absolute path; give the whole path of a PEM file") }
        try ChappieTLSTrust(additionalFiles: [path]).checkFiles()
    }
}

extension SettingsService {
    /// One setting as `config list` shows it: its value in effect and where that comes from.
    public struct Listed: Sendable, Equatable {
        /// The setting.
        public var key: Key
        /// Its value in effect (webhooks redacted), or `nil` when it has none.
        public var value: String?
        /// Where the value comes from: `store`, `this machine`, an environment variable or an
        /// option, `default`, or `unset`.
        public var source: String
    }

    /// The values a store keeps, as ``list(stored:caFileOption:environment:)`` reads them.
    public struct Stored: Sendable {
        var codexHome: String?
        var usageRetention: Duration?
        var originator: String?
        var local: LocalSettings
        var caFile: String?
        var isLocal: Bool
    }

    /// Every setting with the value in effect and its source. `caFileOption` is `--ca-file`;
    /// `environment` gives `$CODEX_HOME`, `$CHAPPIE_CA_FILE` and `HOME`.
    public func list(caFileOption: String?, environment: [String: String]) async throws -> [Listed] {
        let stored = Stored(
            codexHome: try await defaultCodexHome(), usageRetention: try await usageRetention(), originator: try await originator(),
            local: try local(), caFile: try await caFile(), isLocal: storeIsLocal)
        return Self.list(stored: stored, caFileOption: caFileOption, environment: environment)
    }

    /// Every setting as ``list(caFileOption:environment:)`` gives it, from what a store keeps
    /// (`nil`: there is no store yet).
    public static func list(stored: Stored?, caFileOption: String?, environment: [String: String]) -> [Listed] {
        let origin = stored?.isLocal == false ? "team pool" : "store"
        var listed: [Listed] = []
        if let home = stored?.codexHome {
            listed.append(Listed(key: .codexHome, value: home, source: origin))
        } else if let home = environment["CODEX_HOME"].flatMap({ $0.isEmpty ? nil : $0 }) {
            listed.append(Listed(key: .codexHome, value: home, source: "$CODEX_HOME (accounts switch stores it)"))
        } else {
            let codex = (environment["HOME"] ?? NSHomeDirectory()) + "/.codex"
            var isDirectory: ObjCBool = false
            let found = FileManager.default.fileExists(atPath: codex, isDirectory: &isDirectory) && isDirectory.boolValue
            listed.append(Listed(key: .codexHome, value: found ? codex : nil, source: found ? "~/.codex (accounts switch stores it)" : "unset"))
        }
        listed.append(
            stored?.usageRetention.map { Listed(key: .usageRetention, value: DurationText.format($0), source: origin) }
                ?? Listed(key: .usageRetention, value: "365d", source: "default"))
        listed.append(
            stored?.originator.map { Listed(key: .originator, value: $0, source: origin) }
                ?? Listed(key: .originator, value: ChappieEndpoints.defaultOriginator, source: "default"))
        if let option = caFileOption {
            listed.append(Listed(key: .caFile, value: option, source: "--ca-file"))
        } else if let variable = environment["CHAPPIE_CA_FILE"].flatMap({ $0.isEmpty ? nil : $0 }) {
            listed.append(Listed(key: .caFile, value: variable, source: "$CHAPPIE_CA_FILE"))
        } else {
            listed.append(Listed(key: .caFile, value: stored?.caFile, source: stored?.caFile == nil ? "unset" : "this machine"))
        }
        let local = stored?.local
        let webhooks = local?.alertWebhooks.map { $0.map(Self.redacted).joined(separator: "\n") }
        listed.append(Listed(key: .alertWebhook, value: webhooks, source: webhooks == nil ? "unset" : "this machine"))
        listed.append(Listed(key: .alertCommand, value: local?.alertCommand, source: local?.alertCommand == nil ? "unset" : "this machine"))
        listed.append(
            local?.alertAt.map { Listed(key: .alertAt, value: $0, source: "this machine") }
                ?? Listed(
                    key: .alertAt, value: AlertTargets.defaultThresholds.map { String(format: "%g", $0) }.joined(separator: ","), source: "default"))
        return listed
    }
}

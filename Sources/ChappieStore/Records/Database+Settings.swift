import Foundation
import GRDB

/// The keys of `settings`.
package enum SettingKey: String {
    case activeAccount = "active_account"
    case keyCheck = "key_check"
    case keyID = "key_id"
    case passphraseKDF = "passphrase_kdf"
    case codexHome = "codex_home"
    case usageRetention = "usage_retention_seconds"
    case originator = "originator"
    case caFile = "ca_file"
    /// The id of the key a rotation in progress is writing (cleared when it commits).
    case pendingKeyID = "pending_key_id"
    /// Set by migration 0004 when credentials were sealed bound to row ids; cleared once they are
    /// all resealed bound to the accounts' UUIDs. While it is set, and only then, binding 1 opens.
    case rowBoundCredentials = "row_bound_credentials"
}

/// A row of `settings`: one value by key.
struct SettingRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "settings"

    var key: String
    var value: Data
}

extension Database {
    /// A setting's value, if set.
    func setting(_ key: SettingKey) throws -> Data? {
        try SettingRecord.fetchOne(self, key: key.rawValue)?.value
    }

    /// Sets a setting, or with `nil` removes it.
    func setSetting(_ key: SettingKey, _ value: Data?) throws {
        if let value {
            try SettingRecord(key: key.rawValue, value: value).save(self)
        } else {
            _ = try SettingRecord.deleteOne(self, key: key.rawValue)
        }
    }
}

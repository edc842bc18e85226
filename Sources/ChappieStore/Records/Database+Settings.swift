import Foundation
import GRDB

/// The keys of `settings`.
enum SettingKey: String {
    case activeAccount = "active_account"
    case keyCheck = "key_check"
    case keyID = "key_id"
    case passphraseKDF = "passphrase_kdf"
    case codexHome = "codex_home"
    case usageRetention = "usage_retention_seconds"
    /// The id of the key a rotation in progress is writing (cleared when it commits).
    case pendingKeyID = "pending_key_id"
}

extension Database {
    /// A setting's value, if set.
    func setting(_ key: SettingKey) throws -> Data? {
        try Data.fetchOne(self, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key.rawValue])
    }

    /// Sets a setting, or with `nil` removes it.
    func setSetting(_ key: SettingKey, _ value: Data?) throws {
        if let value {
            try execute(sql: "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        arguments: [key.rawValue, value])
        } else {
            try execute(sql: "DELETE FROM settings WHERE key = ?", arguments: [key.rawValue])
        }
    }
}

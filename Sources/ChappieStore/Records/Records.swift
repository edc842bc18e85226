import ChappieCore
import Foundation
import GRDB

/// A row of `accounts`.
struct AccountRecord: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "accounts"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    var id: Int64?
    var name: String
    var email: String?
    var chatgptAccountId: String?
    var chatgptUserId: String?
    var plan: String?
    var isFedramp: Bool
    var status: String
    var accessExpiresAt: Date?
    var lastRefreshAt: Date?
    var lastError: String?
    var codexHome: String?
    var reservePercent: Double?
    var createdAt: Date
    var updatedAt: Date

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    /// The public model; a name or status the schema's checks let through but chappie does not know
    /// is reported as a damaged store rather than crashing.
    func account(activeID: Int64?) throws(StoreError) -> Account {
        guard let id, let name = try? AccountName(name), let status = AccountStatus(rawValue: status) else {
            throw StoreError(.corrupt, "the accounts table has a row chappie cannot read (row \(id ?? -1))")
        }
        return Account(
            id: id, name: name,
            info: ChappieAccountInfo(
                email: email, userID: chatgptUserId, accountID: chatgptAccountId,
                plan: plan.map(ChappiePlan.init(rawValue:)), isFedRAMPAccount: isFedramp),
            status: status, accessTokenExpiresAt: accessExpiresAt, lastRefreshAt: lastRefreshAt,
            lastError: lastError, codexHome: codexHome, reservePercent: reservePercent, createdAt: createdAt, updatedAt: updatedAt,
            isActive: id == activeID)
    }
}

/// A row of `credentials`.
struct CredentialRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "credentials"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    var accountId: Int64
    var keyId: String
    var nonce: Data
    var ciphertext: Data
    var updatedAt: Date
}

/// A row of `events`.
struct EventRecord: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "events"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    var id: Int64?
    var at: Date
    var kind: String
    var accountId: Int64?
    var accountName: String?
    var detail: String

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}

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
    func setting(_ key: SettingKey) throws -> Data? {
        try Data.fetchOne(self, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key.rawValue])
    }

    func setSetting(_ key: SettingKey, _ value: Data?) throws {
        if let value {
            try execute(sql: "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        arguments: [key.rawValue, value])
        } else {
            try execute(sql: "DELETE FROM settings WHERE key = ?", arguments: [key.rawValue])
        }
    }

    func record(_ kind: String, account: AccountRecord?, detail: String = "") throws {
        var event = EventRecord(at: Date(), kind: kind, accountId: account?.id, accountName: account?.name, detail: detail)
        try event.insert(self)
    }
}

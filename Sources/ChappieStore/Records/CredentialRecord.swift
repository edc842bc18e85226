import Foundation
import GRDB

/// A row of `sealed_credentials` (`credentials` before migration 0004): one account's sealed tokens.
struct CredentialRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "sealed_credentials"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    /// The columns queries filter and group by.
    enum Columns {
        static let keyId = Column("key_id")
        static let binding = Column("binding")
    }

    var accountId: Int64
    var keyId: String
    var nonce: Data
    var ciphertext: Data
    var updatedAt: Date
    /// What the associated data names (``CredentialBinding``).
    var binding: CredentialBinding
}

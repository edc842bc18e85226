import ChappieStoreFormat
package import Foundation
import GRDB

/// What a sealed credential's associated data binds it to, besides the key: a blob opens only for
/// the account it was sealed for.
package enum CredentialBinding: Int, Codable, DatabaseValueConvertible {
    /// The account's SQLite row id (stores before migration 0004).
    case rowID = 1
    /// The account's UUID: the same on every backend.
    case uuid = 2

    /// The associated data for an account's credential under a key.
    package func associatedData(accountID: Int64, uuid: UUID, keyID: String) -> String {
        switch self {
        case .rowID: SealingLabels.credential(accountRowID: accountID, keyID: keyID)
        case .uuid: SealingLabels.credential(accountUUID: uuid.uuidString.lowercased(), keyID: keyID)
        }
    }
}

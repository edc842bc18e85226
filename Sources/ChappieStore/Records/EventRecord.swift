import Foundation
import GRDB

/// A row of `events`: one audit-log entry.
struct EventRecord: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "events"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    /// The columns queries sort by.
    enum Columns {
        static let id = Column("id")
        static let at = Column("at")
        static let kind = Column("kind")
        static let accountName = Column("account_name")
    }

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

import ChappieCore
import Foundation
import GRDB

extension Database {
    /// Appends an audit-log entry, in the transaction of the change it records.
    func record(_ kind: AuditEventKind, account: AccountRecord?, detail: String = "") throws {
        var event = EventRecord(at: Date(), kind: kind.rawValue, accountId: account?.id, accountName: account?.name, detail: detail)
        try event.insert(self)
    }
}

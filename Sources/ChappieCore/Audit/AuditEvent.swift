package import Foundation

/// One entry of the audit log.
package struct AuditEvent: Sendable, Hashable, Codable {
    /// When it happened.
    package var at: Date
    /// What happened, as stored: one of ``AuditEventKind``'s raw values (or a kind a newer chappie
    /// wrote).
    package var kind: String
    /// The account it concerns, by name at the time.
    package var accountName: String?
    /// More about it, never a secret.
    package var detail: String

    /// Creates an entry as a store reads it.
    package init(at: Date, kind: String, accountName: String?, detail: String) {
        self.at = at
        self.kind = kind
        self.accountName = accountName
        self.detail = detail
    }

    /// The kind, when this chappie knows it.
    package var knownKind: AuditEventKind? { AuditEventKind(rawValue: kind) }
}

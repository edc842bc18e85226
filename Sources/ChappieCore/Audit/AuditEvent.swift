public import Foundation

/// One entry of the audit log.
public struct AuditEvent: Sendable, Hashable, Codable {
    /// When it happened.
    public var at: Date
    /// What happened, as stored: one of ``AuditEventKind``'s raw values (or a kind a newer chappie
    /// wrote).
    public var kind: String
    /// The account it concerns, by name at the time.
    public var accountName: String?
    /// More about it, never a secret.
    public var detail: String

    /// Creates an entry as a store reads it.
    public init(at: Date, kind: String, accountName: String?, detail: String) {
        self.at = at
        self.kind = kind
        self.accountName = accountName
        self.detail = detail
    }

    /// The kind, when this chappie knows it.
    public var knownKind: AuditEventKind? { AuditEventKind(rawValue: kind) }
}

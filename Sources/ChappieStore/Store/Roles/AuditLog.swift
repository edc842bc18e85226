package import ChappieCore

/// What happened to the accounts and the key, newest first. Entries are written in the same
/// transaction as the change they describe, by the other roles; this role reads them and writes
/// the ones that go with no change (a failed sign-in, a Codex-home import).
package protocol AuditLog: Sendable {
    /// The newest entries, newest first.
    func events(limit: Int) async throws(StoreError) -> [AuditEvent]
    /// Writes an entry about an account (or the store).
    func recordEvent(_ kind: AuditEventKind, account: Account?, detail: String) async throws(StoreError)
}

extension AuditLog {
    /// The newest 50 entries of the audit log.
    package func events() async throws(StoreError) -> [AuditEvent] {
        try await events(limit: 50)
    }
}

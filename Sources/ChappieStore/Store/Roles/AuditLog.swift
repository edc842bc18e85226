package import ChappieCore
package import Foundation

/// What happened to the accounts and the key, newest first. Entries are written in the same
/// transaction as the change they describe, by the other roles; this role reads them and writes
/// the ones that go with no change (a failed sign-in, a Codex-home import).
package protocol AuditLog: Sendable {
    /// The newest entries that `query` selects, newest first.
    func events(_ query: AuditQuery) async throws(StoreError) -> [AuditEvent]
    /// Writes an entry about an account (or the store).
    func recordEvent(_ kind: AuditEventKind, account: Account?, detail: String) async throws(StoreError)
}

/// Which entries of the audit log to read: every condition given must hold.
package struct AuditQuery: Sendable, Equatable {
    /// Only these kinds (raw values), when given.
    package var kinds: [String]?
    /// None of these kinds (`chappie log` leaves polls out unless `--all`).
    package var excludedKinds: [String] = []
    /// Only entries about the account of this name (at the time).
    package var accountName: String?
    /// Only entries from this moment on.
    package var since: Date?
    /// At most this many, the newest.
    package var limit: Int

    /// A query.
    package init(kinds: [String]? = nil, excludedKinds: [String] = [], accountName: String? = nil, since: Date? = nil, limit: Int) {
        self.kinds = kinds
        self.excludedKinds = excludedKinds
        self.accountName = accountName
        self.since = since
        self.limit = limit
    }
}

extension AuditLog {
    /// The newest `limit` entries of the audit log.
    package func events(limit: Int = 50) async throws(StoreError) -> [AuditEvent] {
        try await events(AuditQuery(limit: limit))
    }
}

package import ChappieStore
package import ChappieCore
package import Foundation
import PostgresNIO

extension PostgresAccountStore {
    package func setMaxLeases(_ count: Int, for name: AccountName) async throws(StoreError) -> Account {
        try await database.write { connection in
            guard var record = try await self.record(named: name, connection) else {
                throw StoreError(.notFound, "there is no account named \(name)")
            }
            record.maxLeases = count
            try await connection.query(
                "UPDATE accounts SET max_leases = \(count), updated_at = \(Date()) WHERE id = \(record.id!)", logger: Self.logger)
            try await self.audit(.settingChanged, account: record, detail: "max-leases = \(count)", connection)
            return try record.account(activeID: try await self.activeID(connection))
        }
    }

    package func acquireLease(on candidates: [Lease.Candidate], holder: String, ttl: Duration) async throws(StoreError) -> Lease? {
        let machine = self.machine
        let seconds = ttl.inSeconds
        return try await database.write { connection in
            // Expired leases go first: their slots are taken over.
            let expired = try await connection.query(
                "DELETE FROM leases WHERE expires_at < now() RETURNING account_id, holder, machine", logger: Self.logger)
            var gone: [(Int64, String, String)] = []
            for try await row in expired.decode((Int64, String, String).self) { gone.append(row) }
            for (id, holder, owner) in gone {
                try await self.audit(
                    .leaseExpired, account: try await self.record(id: id, connection),
                    detail: "held by \(holder) on \(owner), not renewed; its slot was taken over", connection)
            }
            for candidate in candidates {
                // Another machine taking a lease on this account at this moment holds its row: skip to the next.
                var maxLeases: Int?
                let locked = try await connection.query(
                    "SELECT max_leases FROM accounts WHERE id = \(candidate.accountID) AND status = 'ok' FOR UPDATE SKIP LOCKED", logger: Self.logger)
                for try await (count) in locked.decode(Int.self) { maxLeases = count }
                guard let maxLeases else { continue }
                var held = 0, whole = false
                let rows = try await connection.query(
                    "SELECT count(*), coalesce(bool_or(whole_account), false) FROM leases WHERE account_id = \(candidate.accountID)",
                    logger: Self.logger)
                for try await (count, any) in rows.decode((Int, Bool).self) { (held, whole) = (count, any) }
                guard candidate.wholeAccount ? held == 0 : (!whole && held < maxLeases) else { continue }
                let id = UUID()
                try await connection.query(
                    """
                    INSERT INTO leases (id, account_id, machine, holder, whole_account, acquired_at, expires_at)
                    VALUES (\(id), \(candidate.accountID), \(machine), \(holder), \(candidate.wholeAccount), now(), now() + make_interval(secs => \(seconds)))
                    """, logger: Self.logger)
                try await self.audit(
                    .leaseAcquired, account: try await self.record(id: candidate.accountID, connection),
                    detail: "lease \(id.uuidString.lowercased()) for \(holder)", connection)
                return try await Self.leases(connection, id: id).first
            }
            return nil
        }
    }

    package func renewLease(_ id: UUID, ttl: Duration) async throws(StoreError) -> Lease {
        let seconds = ttl.inSeconds
        return try await database.write { connection in
            try await connection.query(
                "UPDATE leases SET expires_at = now() + make_interval(secs => \(seconds)) WHERE id = \(id) AND expires_at >= now()",
                logger: Self.logger)
            guard let lease = try await Self.leases(connection, id: id).first else {
                throw StoreError(.notFound, "lease \(id.uuidString.lowercased()) is gone: it expired and its slot was taken over, or it was released")
            }
            return lease
        }
    }

    package func releaseLease(_ id: UUID) async throws(StoreError) {
        try await database.write { connection in
            let rows = try await connection.query("DELETE FROM leases WHERE id = \(id) RETURNING account_id", logger: Self.logger)
            for try await (accountID) in rows.decode(Int64.self) {
                try await self.audit(
                    .leaseReleased, account: try await self.record(id: accountID, connection), detail: "lease \(id.uuidString.lowercased())",
                    connection)
            }
        }
    }

    package func claimPolls(of ids: [Int64], for period: Duration) async throws(StoreError) -> Set<Int64> {
        guard !ids.isEmpty else { return [] }
        let machine = self.machine
        let seconds = period.inSeconds
        return try await database.write { connection in
            var claimed: Set<Int64> = []
            // A claim is taken where there is none, or where the last one ran out (or was this machine's).
            let rows = try await connection.query(
                """
                INSERT INTO poll_claims (account_id, machine, until)
                SELECT id, \(machine), now() + make_interval(secs => \(seconds)) FROM accounts WHERE id = ANY(\(ids))
                ON CONFLICT (account_id) DO UPDATE SET machine = excluded.machine, until = excluded.until
                    WHERE poll_claims.until < now() OR poll_claims.machine = excluded.machine
                RETURNING account_id
                """, logger: Self.logger)
            for try await (id) in rows.decode(Int64.self) { claimed.insert(id) }
            return claimed
        }
    }

    package func leases() async throws(StoreError) -> [Lease] {
        try await database.read { connection in try await Self.leases(connection) }
    }

    /// Leases that have not expired (all, or the one with `id`), by account name then time.
    private static func leases(_ connection: PostgresConnection, id: UUID? = nil) async throws -> [Lease] {
        var leases: [Lease] = []
        let query: PostgresQuery =
            id == nil
            ? """
            SELECT l.id, l.account_id, a.name, l.machine, l.holder, l.whole_account, l.acquired_at, l.expires_at
            FROM leases l JOIN accounts a ON a.id = l.account_id WHERE l.expires_at >= now() ORDER BY a.name COLLATE "C", l.acquired_at
            """
            : """
            SELECT l.id, l.account_id, a.name, l.machine, l.holder, l.whole_account, l.acquired_at, l.expires_at
            FROM leases l JOIN accounts a ON a.id = l.account_id WHERE l.expires_at >= now() AND l.id = \(id!)
            """
        let rows = try await connection.query(query, logger: logger)
        for try await (id, accountID, name, machine, holder, whole, acquiredAt, expiresAt) in rows.decode(
            (UUID, Int64, String, String, String, Bool, Date, Date).self)
        {
            guard let accountName = try? AccountName(name) else { throw StoreError(.corrupt, "the leases table has a row chappie cannot read") }
            leases.append(
                Lease(
                    id: id, accountID: accountID, accountName: accountName, machine: machine, holder: holder, wholeAccount: whole,
                    acquiredAt: StoredNumber.clamped(acquiredAt), expiresAt: StoredNumber.clamped(expiresAt)))
        }
        return leases
    }
}

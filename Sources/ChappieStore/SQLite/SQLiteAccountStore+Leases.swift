public import ChappieCore
public import Foundation
import GRDB

extension SQLiteAccountStore {
    public func setMaxLeases(_ count: Int, for name: AccountName) async throws(StoreError) -> Account {
        try await write { db in
            var record = try Self.record(named: name, db)
            record.maxLeases = count
            record.updatedAt = Date()
            try record.update(db)
            try db.record(.settingChanged, account: record, detail: "max-leases = \(count)")
            return try record.account(activeID: try Self.activeID(db))
        }
    }

    public func setChoice(autoSwitch: Bool?, priority: Int?, for name: AccountName) async throws(StoreError) -> Account {
        try await write { db in
            var record = try Self.record(named: name, db)
            record.autoSwitch = autoSwitch ?? record.autoSwitch
            record.priority = priority ?? record.priority
            record.updatedAt = Date()
            try record.update(db)
            try db.record(.settingChanged, account: record, detail: AccountRecord.choiceDetail(autoSwitch: autoSwitch, priority: priority))
            return try record.account(activeID: try Self.activeID(db))
        }
    }

    package func acquireLease(on candidates: [Lease.Candidate], holder: String, ttl: Duration) async throws(StoreError) -> Lease? {
        let machine = StoreOptions.hostName
        return try await write { db in
            let now = Date()
            // Expired leases go first: their slots are taken over.
            let expired = try Row.fetchAll(
                db, sql: "SELECT l.account_id, l.holder FROM leases l WHERE l.expires_at < ?", arguments: [now.timeIntervalSince1970])
            for row in expired {
                let record = try StoredNumber.integer(row["account_id"]).flatMap { try AccountRecord.fetchOne(db, key: $0) }
                try db.record(
                    .leaseExpired, account: record, detail: "held by \(StoredNumber.text(row["holder"]) ?? "?"), not renewed; its slot was taken over"
                )
            }
            try db.execute(sql: "DELETE FROM leases WHERE expires_at < ?", arguments: [now.timeIntervalSince1970])
            for candidate in candidates {
                guard let record = try AccountRecord.fetchOne(db, key: candidate.accountID), record.status == AccountStatus.ok.rawValue else {
                    continue
                }
                let row = try Row.fetchOne(
                    db, sql: "SELECT count(*) AS n, coalesce(max(whole_account), 0) AS whole FROM leases WHERE account_id = ?",
                    arguments: [candidate.accountID])
                let held: Int = row?["n"] ?? 0
                let whole: Bool = row?["whole"] ?? false
                guard candidate.wholeAccount ? held == 0 : (!whole && held < record.maxLeases) else { continue }
                let lease = Lease(
                    id: UUID(), accountID: candidate.accountID, accountName: try record.account(activeID: nil).name, machine: machine, holder: holder,
                    wholeAccount: candidate.wholeAccount, acquiredAt: now, expiresAt: now.addingTimeInterval(ttl.inSeconds))
                try db.execute(
                    sql: """
                        INSERT INTO leases (id, account_id, machine, holder, whole_account, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        lease.id.uuidString.lowercased(), lease.accountID, machine, holder, lease.wholeAccount, now.timeIntervalSince1970,
                        lease.expiresAt.timeIntervalSince1970,
                    ])
                try db.record(.leaseAcquired, account: record, detail: "lease \(lease.id.uuidString.lowercased()) for \(holder)")
                return lease
            }
            return nil
        }
    }

    package func renewLease(_ id: UUID, ttl: Duration) async throws(StoreError) -> Lease {
        try await write { db in
            let now = Date()
            try db.execute(
                sql: "UPDATE leases SET expires_at = ? WHERE id = ? AND expires_at >= ?",
                arguments: [now.addingTimeInterval(ttl.inSeconds).timeIntervalSince1970, id.uuidString.lowercased(), now.timeIntervalSince1970])
            guard db.changesCount == 1, let lease = try Self.leases(db, id: id).first else {
                throw StoreError(.notFound, "lease \(id.uuidString.lowercased()) is gone: it expired and its slot was taken over, or it was released")
            }
            return lease
        }
    }

    public func releaseLease(_ id: UUID) async throws(StoreError) {
        try await write { db in
            guard let lease = try Self.leases(db, id: id, includingExpired: true).first else { return }
            try db.execute(sql: "DELETE FROM leases WHERE id = ?", arguments: [id.uuidString.lowercased()])
            try db.record(
                .leaseReleased, account: try AccountRecord.fetchOne(db, key: lease.accountID), detail: "lease \(id.uuidString.lowercased())")
        }
    }

    public func claimPolls(of ids: [Int64], for period: Duration) async throws(StoreError) -> Set<Int64> {
        // One machine, one daemon per data directory (DaemonInstance): nobody to share the polls with.
        Set(ids)
    }

    package func leases() async throws(StoreError) -> [Lease] {
        try await read { db in try Self.leases(db) }
    }

    /// Leases that have not expired (all, or the one with `id`), by account name then time.
    private static func leases(_ db: Database, id: UUID? = nil, includingExpired: Bool = false) throws -> [Lease] {
        var sql = """
            SELECT l.id, l.account_id, a.name, l.machine, l.holder, l.whole_account, l.acquired_at, l.expires_at
            FROM leases l JOIN accounts a ON a.id = l.account_id WHERE 1
            """
        var arguments: [any DatabaseValueConvertible] = []
        if !includingExpired {
            sql += " AND l.expires_at >= ?"
            arguments.append(Date().timeIntervalSince1970)
        }
        if let id {
            sql += " AND l.id = ?"
            arguments.append(id.uuidString.lowercased())
        }
        sql += " ORDER BY a.name, l.acquired_at"
        return try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map { row throws(StoreError) in
            guard let id = StoredNumber.text(row[0]).flatMap(UUID.init(uuidString:)),
                let name = StoredNumber.text(row[2]).flatMap({ try? AccountName($0) }),
                let accountID = StoredNumber.integer(row[1])
            else {
                throw StoreError(.corrupt, "the leases table has a row chappie cannot read")
            }
            return Lease(
                id: id, accountID: accountID, accountName: name, machine: StoredNumber.text(row[3]) ?? "?", holder: StoredNumber.text(row[4]) ?? "?",
                // Unreadable: the whole account, the lease that holds the most.
                wholeAccount: StoredNumber.integer(row[5]).map { $0 != 0 } ?? true,
                acquiredAt: StoredNumber.clamped(Date(timeIntervalSince1970: StoredNumber.real(row[6]) ?? 0)),
                expiresAt: StoredNumber.clamped(Date(timeIntervalSince1970: StoredNumber.real(row[7]) ?? 0)))
        }
    }
}

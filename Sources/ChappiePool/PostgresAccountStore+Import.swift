import ChappieStore
package import ChappieCore
import Foundation
import PostgresNIO

extension PostgresAccountStore {
    /// Why an account was not brought into the pool.
    package enum ImportRefusal: Error, Sendable {
        /// The pool has another sign-in of the same ChatGPT account and user.
        case alreadyInPool
        /// Another account in the pool has its name.
        case nameTaken
    }

    /// Brings an account from another store into the pool as it is: its identity (so its sealed
    /// credentials stay bound to it), name, settings, status and times, its tokens sealed with the
    /// pool's key, and its usage history, in one transaction.
    ///
    /// An account with the same identity in the pool is this one, brought in before (by a run whose
    /// answer was lost, say): it counts as brought in, and keeps whichever tokens were refreshed
    /// last, or the pool's whatever the times say with `keepingPoolCopy` (the local copy was frozen
    /// when an earlier run marked it: the pool's can only be as new or newer, whatever clocks say).
    /// One being refreshed in the pool at that moment is refused for now.
    ///
    /// - Returns: The account as the pool stores it.
    /// - Throws: ``ImportRefusal`` (nothing changed), or ``StoreError``.
    package func importAccount(
        _ account: Account, credentials: Credentials, usage: [UsageSample], from origin: String, keepingPoolCopy: Bool = false
    ) async throws -> Account {
        let key = self.key
        let machine = self.machine
        let outcome: Result<Account, ImportRefusal> = try await database.write { connection in
            let same = try await self.records(
                "SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE uuid = \(account.uuid) FOR UPDATE", connection)
            if let record = same.first, let id = record.id {
                var intents = 0
                for try await (count) in try await connection.query(
                    "SELECT count(*) FROM refresh_intents WHERE account_id = \(id)", logger: Self.logger
                ).decode(Int.self) {
                    intents = count
                }
                guard intents == 0 else { throw StoreError(.unavailable, "account \(account.name) is being refreshed in the pool; run this again") }
                if !keepingPoolCopy, (account.lastRefreshAt ?? .distantPast) > (record.lastRefreshAt ?? .distantPast) {
                    try await connection.query(
                        """
                        UPDATE accounts SET access_expires_at = \(account.accessTokenExpiresAt), last_refresh_at = \(account.lastRefreshAt),
                            status = \(account.status.rawValue), updated_at = \(Date())
                        WHERE id = \(id)
                        """, logger: Self.logger)
                    try await self.seal(credentials, of: record, key: key, connection)
                    try await self.audit(.imported, account: record, detail: "newer tokens from \(origin)", connection)
                }
                return .success(try record.account(activeID: try await self.activeID(connection)))
            }
            var existing = 0
            let rows = try await connection.query(
                """
                SELECT count(*) FROM accounts WHERE chatgpt_account_id = \(account.info.accountID) AND chatgpt_user_id = \(account.info.userID)
                """, logger: Self.logger)
            for try await (count) in rows.decode(Int.self) { existing = count }
            guard existing == 0 else { return .failure(.alreadyInPool) }
            guard try await self.record(named: account.name, connection) == nil else { return .failure(.nameTaken) }
            var id: Int64 = 0
            let inserted = try await connection.query(
                """
                INSERT INTO accounts (uuid, name, email, chatgpt_account_id, chatgpt_user_id, plan, is_fedramp, status, access_expires_at,
                    last_refresh_at, last_error, codex_home_machine, codex_home, reserve_percent, max_leases, auto_switch, priority, created_at,
                    updated_at)
                VALUES (\(account.uuid), \(account.name.rawValue), \(account.info.email), \(account.info.accountID), \(account.info.userID),
                    \(account.info.plan?.rawValue), \(account.info.isFedRAMPAccount), \(account.status.rawValue), \(account.accessTokenExpiresAt),
                    \(account.lastRefreshAt), \(account.lastError), \(account.codexHome == nil ? nil : machine), \(account.codexHome),
                    \(account.reservePercent), \(account.maxLeases), \(account.autoSwitch), \(account.priority), \(account.createdAt), \(Date()))
                RETURNING id
                """, logger: Self.logger)
            for try await (value) in inserted.decode(Int64.self) { id = value }
            guard let record = try await self.record(id: id, connection) else { throw StoreError(.database, "the imported account vanished") }
            try await self.seal(credentials, of: record, key: key, connection)
            for sample in usage {
                try await Self.insertSample(
                    UsageSampleRecord(sample.snapshot, accountID: id, source: sample.source, at: sample.observedAt), machine: machine, connection)
            }
            try await self.audit(.imported, account: record, detail: "moved from \(origin) with \(usage.count) usage readings", connection)
            return .success(try record.account(activeID: try await self.activeID(connection)))
        }
        return try outcome.get()
    }
}

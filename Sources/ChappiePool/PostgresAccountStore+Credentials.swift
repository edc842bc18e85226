package import ChappieStore
package import ChappieCore
import ChappieVault
package import Foundation
import PostgresNIO
import Synchronization

extension PostgresAccountStore {
    /// A stored credential: the sealed blob and what it is sealed with.
    struct StoredCredential: Sendable {
        var keyID: String
        var nonce: Data
        var ciphertext: Data
        var updatedAt: Date
    }

    func storedCredential(accountID: Int64, _ connection: PostgresConnection) async throws -> StoredCredential? {
        let rows = try await connection.query(
            "SELECT key_id, nonce, ciphertext, updated_at FROM sealed_credentials WHERE account_id = \(accountID)", logger: Self.logger)
        for try await (keyID, nonce, ciphertext, updatedAt) in rows.decode((String, Data, Data, Date).self) {
            return StoredCredential(keyID: keyID, nonce: nonce, ciphertext: ciphertext, updatedAt: updatedAt)
        }
        return nil
    }

    package func credentials(for account: Account) async throws(StoreError) -> Credentials {
        let stored = try await database.read { connection in try await self.storedCredential(accountID: account.id, connection) }
        // Tokens a refresh on this machine could not commit are newer than the stored ones until adopted.
        if case .pending(let pending) = recoveryState(for: account, stored: stored) { return pending.credentials }
        guard let stored else {
            throw StoreError(.credentialUnreadable, "account \(account.name) has no stored credentials; sign it in again")
        }
        if stored.keyID != key.id, try await reloadKeyIfChanged() { return try await credentials(for: account) }
        return try open(stored, of: account)
    }

    /// Opens a stored credential with the store's key.
    private func open(_ stored: StoredCredential, of account: Account) throws(StoreError) -> Credentials {
        let key = self.key
        guard stored.keyID == key.id else {
            throw StoreError(
                .credentialUnreadable,
                "account \(account.name)'s credentials are sealed with key \(stored.keyID), not this machine's key \(key.id); install the pool's key on this machine (team-pool.md in share/doc/chappie)"
            )
        }
        let associatedData = CredentialBinding.uuid.associatedData(accountID: account.id, uuid: account.uuid, keyID: key.id)
        guard let opened = try? SealedBox(nonce: stored.nonce, ciphertext: stored.ciphertext).open(key: key, associatedData: associatedData) else {
            throw StoreError(
                .credentialUnreadable,
                "account \(account.name)'s sealed credentials do not open (altered, or copied from another account); sign it in again")
        }
        return try CredentialSealing.decode(opened, label: "account \(account.name)'s credentials")
    }

    package func credentialProblems(of accounts: [Account]) async throws(StoreError) -> [Int64: String] {
        // One query for all of them: a listing must not make a round trip per account.
        let ids = accounts.map(\.id)
        let stored = try await database.read { connection in
            var stored: [Int64: StoredCredential] = [:]
            let rows = try await connection.query(
                "SELECT account_id, key_id, nonce, ciphertext, updated_at FROM sealed_credentials WHERE account_id = ANY(\(ids))", logger: Self.logger
            )
            for try await (id, keyID, nonce, ciphertext, updatedAt) in rows.decode((Int64, String, Data, Data, Date).self) {
                stored[id] = StoredCredential(keyID: keyID, nonce: nonce, ciphertext: ciphertext, updatedAt: updatedAt)
            }
            return stored
        }
        var problems: [Int64: String] = [:]
        for account in accounts {
            if case .pending = recoveryState(for: account, stored: stored[account.id]) { continue }
            guard let credential = stored[account.id] else {
                problems[account.id] = "account \(account.name) has no stored credentials; sign it in again"
                continue
            }
            do {
                _ = try open(credential, of: account)
            } catch {
                problems[account.id] = error.message
            }
        }
        return problems
    }

    package func updateCredentials(
        of account: Account, to credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date, event: AuditEventKind,
        detail: String
    ) async throws(StoreError) -> Account {
        let key = self.key
        let updated = try await database.write { connection in
            guard var record = try await self.record(id: account.id, connection, forUpdate: true) else {
                throw StoreError(.notFound, "account \(account.name) was removed meanwhile")
            }
            record.storeTokens(accessExpiresAt: accessTokenExpiresAt, refreshedAt: refreshedAt)
            try await connection.query(
                """
                UPDATE accounts SET access_expires_at = \(accessTokenExpiresAt), last_refresh_at = \(refreshedAt), status = 'ok', last_error = NULL,
                    updated_at = \(record.updatedAt)
                WHERE id = \(account.id)
                """, logger: Self.logger)
            try await self.seal(credentials, of: record, key: key, connection)
            // Redeemed tokens stored (or recovered ones): no refresh of the account is unfinished any
            // more. Codex's tokens adopted before a redemption leave the intent for that redemption.
            if event != .adopted {
                try await connection.query("DELETE FROM refresh_intents WHERE account_id = \(account.id)", logger: Self.logger)
            }
            try await self.audit(event, account: record, detail: detail, connection)
            return try record.account(activeID: try await self.activeID(connection))
        }
        // The pool now holds the newest tokens: this machine's recovery file for the account is stale.
        removeRecoveryFile(for: account)
        return updated
    }

    package func recordFailure(of account: Account, message: String, status: AccountStatus?, event: AuditEventKind) async throws(StoreError) {
        try await database.write { connection in
            guard let record = try await self.record(id: account.id, connection) else { return }
            try await connection.query(
                """
                UPDATE accounts SET last_error = \(message), status = \(status?.rawValue ?? record.status), updated_at = \(Date())
                WHERE id = \(account.id)
                """, logger: Self.logger)
            try await self.audit(event, account: record, detail: message, connection)
        }
    }

    package func credentialCountsByKey() async throws(StoreError) -> [String: Int] {
        try await database.read { connection in
            var counts: [String: Int] = [:]
            let rows = try await connection.query("SELECT key_id, count(*) FROM sealed_credentials GROUP BY key_id", logger: Self.logger)
            for try await (keyID, count) in rows.decode((String, Int).self) { counts[keyID] = count }
            return counts
        }
    }

    /// Inside a write transaction: seals an account's tokens with this machine's key, bound to the
    /// account's UUID. Refused when the pool's key is not this key (nothing would open it).
    func seal(_ credentials: Credentials, of record: AccountRecord, key: SecretKey, _ connection: PostgresConnection) async throws {
        guard try await PoolDatabase.setting(.keyID, connection).map({ String(decoding: $0, as: UTF8.self) }) == key.id else {
            throw StoreError(
                .wrongKey,
                "the pool's key is no longer this machine's key \(key.id); install the pool's key (team-pool.md in share/doc/chappie); nothing was changed"
            )
        }
        guard let id = record.id, let uuid = UUID(uuidString: record.uuid) else {
            throw StoreError(.corrupt, "the pool has an account chappie cannot read (row \(record.id ?? -1))")
        }
        let box = try CredentialSealing.seal(credentials, key: key, accountID: id, uuid: uuid)
        try await connection.query(
            """
            INSERT INTO sealed_credentials (account_id, key_id, nonce, ciphertext, updated_at, binding)
            VALUES (\(id), \(key.id), \(box.nonce), \(box.ciphertext), \(Date()), 2)
            ON CONFLICT (account_id) DO UPDATE SET key_id = excluded.key_id, nonce = excluded.nonce, ciphertext = excluded.ciphertext,
                updated_at = excluded.updated_at, binding = 2
            """, logger: Self.logger)
    }

    // MARK: Recovery files

    /// Where this machine keeps tokens it could not commit to the pool: `recovery/` in the data
    /// directory, one file per account's UUID.
    func recoveryURL(for account: Account) -> URL {
        location.directory.appendingPathComponent("recovery/pool-\(account.uuid.uuidString.lowercased()).sealed")
    }

    func recoveryState(for account: Account, stored: StoredCredential?) -> RecoveryState {
        RecoveryFile.state(
            at: recoveryURL(for: account), accountID: account.id, uuid: account.uuid, key: key, storedNonce: stored?.nonce,
            storedAt: stored?.updatedAt)
    }

    @discardableResult
    package func keepForRecovery(
        _ credentials: Credentials, of account: Account, accessTokenExpiresAt: Date?, refreshedAt: Date
    ) async throws(StoreError) -> URL {
        // What the pool holds now, if it can be read.
        let base = try? await database.read { connection in try await self.storedCredential(accountID: account.id, connection)?.nonce }
        let url = recoveryURL(for: account)
        try RecoveryFile.keep(
            credentials, of: account, key: key, baseNonce: base ?? nil, accessExpiresAt: accessTokenExpiresAt, refreshedAt: refreshedAt, at: url)
        return url
    }

    package func quarantine(_ credentials: Credentials, of account: Account) async throws(StoreError) -> URL {
        try RecoveryFile.quarantine(credentials, of: account, key: key, in: location)
    }

    package func reserveRecovery(for account: Account) async throws(StoreError) {
        try RecoveryFile.reserveSlot(for: recoveryURL(for: account))
    }

    func removeRecoveryFile(for account: Account) {
        RecoveryFile.remove(at: recoveryURL(for: account))
    }

    /// Adopts this machine's pending recovery files into the pool, each under its account's refresh
    /// lock; stale ones are removed, unreadable ones kept. Nothing is lost when the pool still cannot
    /// be written: the files stay, and reads keep using them.
    ///
    /// - Returns: The accounts whose tokens were adopted.
    @discardableResult
    package func adoptRecoveredTokens() async -> [AccountName] {
        let directory = location.directory.appendingPathComponent("recovery")
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path),
            names.contains(where: {
                $0.hasPrefix("pool-")
                    && ($0.hasSuffix(".sealed")
                        || RecoveryFile.pendingData(at: directory.appendingPathComponent(($0 as NSString).deletingPathExtension + ".sealed")) != nil)
            }),
            let accounts = try? await accounts()
        else { return [] }
        var adopted: [AccountName] = []
        for account in accounts where RecoveryFile.pendingData(at: recoveryURL(for: account)) != nil {
            let settled: Bool? = try? await withRefreshLock(on: account) {
                let stored = try await self.database.read { connection in try await self.storedCredential(accountID: account.id, connection) }
                switch self.recoveryState(for: account, stored: stored) {
                case .none, .unreadable: return false
                case .stale:
                    self.removeRecoveryFile(for: account)
                    return false
                case .pending(let pending):
                    _ = try await self.updateCredentials(
                        of: account, to: pending.credentials, accessTokenExpiresAt: pending.accessExpiresAt, refreshedAt: pending.refreshedAt,
                        event: .recovered, detail: "tokens a refresh could not store were adopted from the recovery file")
                    return true
                }
            }
            if settled == true { adopted.append(account.name) }
        }
        return adopted
    }

    // MARK: Serialisation

    nonisolated(nonsending) package func withRefreshLock<T>(onAccounts ids: [Int64], _ body: () async throws -> T) async throws -> T {
        let sorted = Set(ids).sorted()
        // This machine's processes queue on their files first: one connection per machine waits on the pool.
        var locks: [FileLock] = []
        for id in sorted { locks.append(try await FileLock.acquireRefreshLock(lockURL(forAccountID: id))) }
        defer { withExtendedLifetime(locks) {} }
        return try await database.holdingRefreshLocks(sorted) {
            try await self.claimRefresh(of: sorted)
            do {
                let value = try await body()
                await self.settleRefreshIntents(of: sorted)
                return value
            } catch {
                await self.settleRefreshIntents(of: sorted)
                throw error
            }
        }
    }

    /// Holding the accounts' refresh locks, before anything may be redeemed:
    /// - refuses an account whose tokens are in a Codex home on another machine: that machine's Codex
    ///   refreshes them on its own, so only that machine may (it adopts what Codex redeemed);
    /// - refuses one another data directory redeemed and has not stored yet (its intent);
    /// - settles this data directory's own unfinished refreshes (adopting its recovery file);
    /// - then records, durably and only where no one else's intent is, that this one may redeem them.
    private func claimRefresh(of ids: [Int64]) async throws {
        let (machine, instance) = (self.machine, self.instance)
        let (intents, elsewhere) = try await database.read { connection in
            var intents: [(Int64, String, UUID, Date)] = []
            let rows = try await connection.query(
                "SELECT account_id, machine, instance, started_at FROM refresh_intents WHERE account_id = ANY(\(ids))", logger: Self.logger)
            for try await row in rows.decode((Int64, String, UUID, Date).self) { intents.append(row) }
            var elsewhere: [(String, String, String)] = []
            let homes = try await connection.query(
                """
                SELECT name, codex_home_machine, codex_home FROM accounts
                WHERE id = ANY(\(ids)) AND codex_home_machine IS NOT NULL AND codex_home_machine <> \(machine)
                """, logger: Self.logger)
            for try await row in homes.decode((String, String, String).self) { elsewhere.append(row) }
            return (intents, elsewhere)
        }
        if let (name, owner, home) = elsewhere.first {
            throw StoreError(
                .unavailable,
                "account \(name)'s tokens are in the Codex home \(home) on machine \(owner), whose Codex refreshes them on its own: only \(owner) refreshes this account (its daemon, or any chappie command there). Nothing was redeemed here; try again later"
            )
        }
        for (id, owner, ownerInstance, startedAt) in intents {
            let account = try await account(id: id)
            guard ownerInstance == instance else {
                throw StoreError(
                    .unavailable,
                    "account \(account.name) was refreshed on machine \(owner) (\(startedAt.formatted(.iso8601))), which has not stored the new tokens in the pool yet; they are stored by the next chappie command run there. Nothing was redeemed here; try again later. If \(owner) is gone for good, its tokens are lost: sign the account in again (chappie accounts add \(account.name))"
                )
            }
            if case .pending(let pending) = recoveryState(
                for: account, stored: try await database.read { try await self.storedCredential(accountID: id, $0) })
            {
                // Stores them and clears the intent, in one transaction.
                _ = try await updateCredentials(
                    of: account, to: pending.credentials, accessTokenExpiresAt: pending.accessExpiresAt, refreshedAt: pending.refreshedAt,
                    event: .recovered, detail: "tokens a refresh could not store were adopted from the recovery file")
            }
        }
        let claimed = try await database.write { connection in
            var claimed = 0
            for id in ids {
                // Taken only where there is no intent, or this data directory's own: never over another's.
                let rows = try await connection.query(
                    """
                    INSERT INTO refresh_intents (account_id, machine, instance) VALUES (\(id), \(machine), \(instance))
                    ON CONFLICT (account_id) DO UPDATE SET started_at = now() WHERE refresh_intents.instance = excluded.instance
                    RETURNING account_id
                    """, logger: Self.logger)
                for try await _ in rows { claimed += 1 }
            }
            return claimed
        }
        guard claimed == ids.count else {
            throw StoreError(
                .unavailable, "another machine began refreshing this account at the same moment; nothing was redeemed here; try again later")
        }
    }

    /// After a refresh: the intents of accounts whose tokens this data directory could not store (a
    /// pending recovery file) stay; its other intents go. Best effort: an intent left behind by an
    /// unreachable database is settled by this data directory's next refresh of the account.
    private func settleRefreshIntents(of ids: [Int64]) async {
        var settled: [Int64] = []
        for id in ids {
            guard let account = try? await account(id: id) else { continue }
            let stored = try? await database.read { try await self.storedCredential(accountID: id, $0) }
            if case .pending = recoveryState(for: account, stored: stored ?? nil) { continue }
            settled.append(id)
        }
        guard !settled.isEmpty else { return }
        let instance = self.instance, done = settled
        _ = try? await database.write { connection in
            try await connection.query(
                "DELETE FROM refresh_intents WHERE account_id = ANY(\(done)) AND instance = \(instance)", logger: Self.logger)
        }
    }

    /// The local lock file that orders this machine's refreshes of a pool account.
    package func lockURL(forAccountID id: Int64) -> URL {
        location.directory.appendingPathComponent("locks/pool-account-\(id).lock")
    }

    nonisolated(nonsending) package func withKeyHeld<T>(_ body: () async throws -> T) async throws -> T {
        // chappie never rotates a pool's key (docs/team-pool.md): there is no rotation to hold off,
        // only a key another machine installed to take up.
        try await reloadKeyIfChanged()
        return try await body()
    }

    /// Another machine's operator may replace a pool's key (chappie itself never rotates it).
    package var keyChangesElsewhere: Bool { true }

    package func keyIsCurrent() async throws(StoreError) -> Bool {
        let id = key.id
        return try await database.read { connection in
            try await PoolDatabase.setting(.keyID, connection).map { String(decoding: $0, as: UTF8.self) } == id
        }
    }

    /// Reads the key again from its source when the pool's key is no longer the one this store
    /// was unlocked with (the pool's key replaced by an operator).
    ///
    /// - Returns: Whether the key changed.
    /// - Throws: ``StoreError`` `.wrongKey` when the source does not hold the pool's key.
    @discardableResult
    func reloadKeyIfChanged() async throws(StoreError) -> Bool {
        guard try await !keyIsCurrent() else { return false }
        let check = try await database.read { connection in try await PoolDatabase.setting(.keyCheck, connection) }
        guard let keySource, let newKey = try? keySource(), let check, KeyCheck.verify(check, key: newKey) else {
            throw StoreError(
                .wrongKey,
                "the pool's key changed, and this machine does not have the new key; install it (team-pool.md in share/doc/chappie); nothing was changed"
            )
        }
        currentKey.withLock { $0 = newKey }
        return true
    }
}

public import ChappieCore
import ChappieVault
package import Foundation
import GRDB

extension SQLiteAccountStore {
    package func credentials(for account: Account) async throws(StoreError) -> Credentials {
        try await credentials(for: account, evenIfMoving: false)
    }

    func credentials(for account: Account, evenIfMoving: Bool) async throws(StoreError) -> Credentials {
        let (record, moving) = try await read { db in
            (try CredentialRecord.fetchOne(db, key: account.id), try Self.isMoving(account.id, db))
        }
        if moving, !evenIfMoving { throw StoreError(.moving, Self.movingProblem(account)) }
        // Tokens a refresh could not commit are newer than the stored ones until they are adopted.
        if case .pending(let pending) = recoveryState(for: account, stored: record) { return pending.credentials }
        guard let record else {
            throw StoreError(.credentialUnreadable, "account \(account.name) has no stored credentials; sign it in again")
        }
        if record.keyId != key.id, try await reloadKeyIfRotated() {
            return try await credentials(for: account, evenIfMoving: evenIfMoving)
        }
        guard record.keyId == key.id else {
            throw StoreError(
                .credentialUnreadable,
                "account \(account.name)'s credentials are sealed with key \(record.keyId), not the store's key \(key.id); sign it in again")
        }
        guard let opened = try? open(record, uuid: account.uuid, key: key) else {
            throw StoreError(
                .credentialUnreadable,
                "account \(account.name)'s sealed credentials do not open (altered, or copied from another account); sign it in again")
        }
        return try CredentialSealing.decode(opened, label: "account \(account.name)'s credentials")
    }

    /// Opens one sealed credential row with a key, by the binding it was sealed with (a row-bound
    /// one only until the store's one-time reseal to UUIDs).
    func open(_ record: CredentialRecord, uuid: UUID, key: SecretKey) throws -> SecretBytes {
        if record.binding == .rowID, !acceptsRowBoundCredentials {
            throw StoreError(.credentialUnreadable, "a credential bound to a row id after the store was resealed")
        }
        return try SealedBox(nonce: record.nonce, ciphertext: record.ciphertext)
            .open(key: key, associatedData: record.binding.associatedData(accountID: record.accountId, uuid: uuid, keyID: record.keyId))
    }

    public func credentialProblems(of accounts: [Account]) async throws(StoreError) -> [Int64: String] {
        func fetch() async throws(StoreError) -> [Int64: CredentialRecord] {
            Dictionary(uniqueKeysWithValues: try await read { db in try CredentialRecord.fetchAll(db) }.map { ($0.accountId, $0) })
        }
        var records = try await fetch()
        if records.values.contains(where: { $0.keyId != self.key.id }), try await reloadKeyIfRotated() { records = try await fetch() }
        let key = self.key
        let moving = try await movingAccountIDs()
        var problems: [Int64: String] = [:]
        for account in accounts {
            if moving.contains(account.id) {
                problems[account.id] = Self.movingProblem(account)
                continue
            }
            guard let record = records[account.id] else {
                problems[account.id] = "account \(account.name) has no stored credentials; sign it in again"
                continue
            }
            guard record.keyId == key.id else {
                problems[account.id] =
                    "account \(account.name)'s credentials are sealed with key \(record.keyId), not the store's key \(key.id); sign it in again"
                continue
            }
            if (try? open(record, uuid: account.uuid, key: key)) == nil {
                problems[account.id] =
                    "account \(account.name)'s sealed credentials do not open (altered, or copied from another account); sign it in again"
            }
        }
        return problems
    }

    package func updateCredentials(
        of account: Account, to credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date, event: AuditEventKind,
        detail: String
    ) async throws(StoreError) -> Account {
        let updated = try await write { db in
            guard var record = try AccountRecord.fetchOne(db, key: account.id) else {
                throw StoreError(.notFound, "account \(account.name) was removed meanwhile")
            }
            try Self.refuseIfMoving(account.id, name: account.name.rawValue, db)
            record.storeTokens(accessExpiresAt: accessTokenExpiresAt, refreshedAt: refreshedAt)
            try record.update(db)
            try self.seal(credentials, of: record, db)
            try db.record(event, account: record, detail: detail)
            return try record.account(activeID: try Self.activeID(db))
        }
        // The database now holds the newest tokens: a recovery file for the account is stale.
        removeRecoveryFile(for: account.id)
        return updated
    }

    package func recordFailure(of account: Account, message: String, status: AccountStatus?, event: AuditEventKind) async throws(StoreError) {
        try await write { db in
            guard var record = try AccountRecord.fetchOne(db, key: account.id) else { return }
            record.lastError = message
            if let status { record.status = status.rawValue }
            record.updatedAt = Date()
            try record.update(db)
            try db.record(event, account: record, detail: message)
        }
    }

    public func credentialCountsByKey() async throws(StoreError) -> [String: Int] {
        try await read { db in
            let request = CredentialRecord.select(CredentialRecord.Columns.keyId, count(CredentialRecord.Columns.keyId))
                .group(CredentialRecord.Columns.keyId)
            var counts: [String: Int] = [:]
            for row in try Row.fetchAll(db, request) { counts[row[0]] = row[1] }
            return counts
        }
    }

    /// Inside a write transaction: seals an account's tokens with the store's key, bound to the
    /// account's UUID.
    func seal(_ credentials: Credentials, of account: AccountRecord, _ db: Database) throws {
        // Another process may have rotated the key since this store was unlocked: sealing with the
        // old key now would leave a credential nobody can open.
        let key = self.key
        guard try db.setting(.keyID).map({ String(decoding: $0, as: UTF8.self) }) == key.id else {
            throw StoreError(
                .wrongKey, "the store's key was rotated by another chappie process; run the command again (restart a daemon); nothing was changed")
        }
        guard let id = account.id, let uuid = UUID(uuidString: account.uuid) else {
            throw StoreError(.corrupt, "the accounts table has a row chappie cannot read (row \(account.id ?? -1))")
        }
        let box = try CredentialSealing.seal(credentials, key: key, accountID: id, uuid: uuid)
        try CredentialRecord(accountId: id, keyId: key.id, nonce: box.nonce, ciphertext: box.ciphertext, updatedAt: Date(), binding: .uuid)
            .save(db)
    }
}

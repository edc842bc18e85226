public import ChappieCore
public import ChappieVault
public import Foundation
import GRDB
import Synchronization

/// The unlocked store: accounts, their sealed credentials, settings and the audit log.
///
/// Every credential is sealed with the store's key and associated data naming its account row and
/// the key id, so a blob moved to another row, or sealed by another key, does not open. Writes are
/// transactions; an event is written in the same transaction as the change it records.
///
/// ```swift
/// let store = try StoreDatabase.open(at: location).unlock(with: key)
/// for account in try store.accounts() { print(account.name) }
/// ```
public final class AccountStore: Sendable {
    private let database: StoreDatabase
    private let currentKey: Mutex<SecretKey>
    /// Reads the key again from where it came from (a key file), after another process rotated it;
    /// `nil` for a passphrase, which cannot be read again.
    let keySource: (@Sendable () throws -> SecretKey)?

    init(database: StoreDatabase, key: SecretKey, keySource: (@Sendable () throws -> SecretKey)? = nil) {
        self.database = database
        self.currentKey = Mutex(key)
        self.keySource = keySource
    }

    /// The key that unlocked the store (after a rotation by another process, the new key once
    /// chappie has read it again).
    public var key: SecretKey { currentKey.withLock { $0 } }

    func replaceKey(with newKey: SecretKey) {
        currentKey.withLock { $0 = newKey }
    }

    var pool: DatabasePool { database.pool }

    /// Where the store lives.
    public var location: StoreLocation { database.location }

    // MARK: Reading

    /// Every account, by name.
    public func accounts() throws(StoreError) -> [Account] {
        try read { db in
            let active = try Self.activeID(db)
            return try AccountRecord.order(Column("name")).fetchAll(db).map { record throws(StoreError) in try record.account(activeID: active) }
        }
    }

    /// The account with this name.
    ///
    /// - Throws: ``StoreError`` `.notFound`, naming the accounts there are.
    public func account(named name: AccountName) throws(StoreError) -> Account {
        try read { db in
            guard let record = try AccountRecord.filter(Column("name") == name.rawValue).fetchOne(db) else {
                let names = try String.fetchAll(db, sql: "SELECT name FROM accounts ORDER BY name")
                throw StoreError(
                    .notFound,
                    names.isEmpty
                        ? "there is no account named \(name): no account is stored yet"
                        : "there is no account named \(name); the accounts are: \(names.joined(separator: ", "))")
            }
            return try record.account(activeID: try Self.activeID(db))
        }
    }

    /// The active account, if one is set.
    public func activeAccount() throws(StoreError) -> Account? {
        try read { db in
            guard let id = try Self.activeID(db), let record = try AccountRecord.fetchOne(db, key: id) else { return nil }
            return try record.account(activeID: id)
        }
    }

    /// Opens an account's sealed credentials.
    ///
    /// - Throws: ``StoreError`` `.credentialUnreadable` when its blob is missing, damaged, moved from
    ///   another row or sealed by another key; other accounts are not affected.
    public func credentials(for account: Account) throws(StoreError) -> Credentials {
        let record = try read { db in try CredentialRecord.fetchOne(db, key: account.id) }
        // Tokens a refresh could not commit are newer than the stored ones until they are adopted.
        if case .pending(let pending) = recoveryState(for: account.id, stored: record) { return pending.credentials }
        guard let record else {
            throw StoreError(.credentialUnreadable, "account \(account.name) has no stored credentials; sign it in again")
        }
        if record.keyId != key.id, try reloadKeyIfRotated() {
            return try credentials(for: account)
        }
        guard record.keyId == key.id else {
            throw StoreError(
                .credentialUnreadable,
                "account \(account.name)'s credentials are sealed with key \(record.keyId), not the store's key \(key.id); sign it in again")
        }
        return try open(record, account: account)
    }

    /// Opens one sealed credential row with the store's key.
    private func open(_ record: CredentialRecord, account: Account) throws(StoreError) -> Credentials {
        let box = SealedBox(nonce: record.nonce, ciphertext: record.ciphertext)
        let opened: SecretBytes
        do {
            opened = try box.open(key: key, associatedData: Self.associatedData(accountID: account.id, keyID: key.id))
        } catch {
            throw StoreError(
                .credentialUnreadable,
                "account \(account.name)'s sealed credentials do not open (altered, or copied from another account); sign it in again")
        }
        return try Self.decodeCredentials(opened, label: "account \(account.name)'s credentials")
    }

    /// Decodes opened credential bytes, zeroing the decoder's copy.
    static func decodeCredentials(_ opened: SecretBytes, label: String) throws(StoreError) -> Credentials {
        var plain = opened.unprotectedData()
        defer { plain.zeroize() }
        guard let credentials = try? JSONDecoder().decode(Credentials.self, from: plain) else {
            throw StoreError(.credentialUnreadable, "\(label) are not in the expected form; sign it in again")
        }
        return credentials
    }

    /// Whether the key this store was unlocked with is still the store's key (another process may
    /// have rotated it).
    public func keyIsCurrent() throws(StoreError) -> Bool {
        try read { db in try db.setting(.keyID).map { String(decoding: $0, as: UTF8.self) } == key.id }
    }

    /// Checks these accounts' sealed credentials, read in one query: which do not open, and why.
    /// (The bytes are authenticated, not decoded, so this is cheap enough for every `accounts list`.)
    public func credentialProblems(of accounts: [Account]) throws(StoreError) -> [Int64: String] {
        func fetch() throws(StoreError) -> [Int64: CredentialRecord] {
            Dictionary(uniqueKeysWithValues: try read { db in try CredentialRecord.fetchAll(db) }.map { ($0.accountId, $0) })
        }
        var records = try fetch()
        if records.values.contains(where: { $0.keyId != key.id }), try reloadKeyIfRotated() { records = try fetch() }
        var problems: [Int64: String] = [:]
        for account in accounts {
            guard let record = records[account.id] else {
                problems[account.id] = "account \(account.name) has no stored credentials; sign it in again"
                continue
            }
            guard record.keyId == key.id else {
                problems[account.id] = "account \(account.name)'s credentials are sealed with key \(record.keyId), not the store's key \(key.id); sign it in again"
                continue
            }
            let box = SealedBox(nonce: record.nonce, ciphertext: record.ciphertext)
            if (try? box.open(key: key, associatedData: Self.associatedData(accountID: account.id, keyID: key.id))) == nil {
                problems[account.id] = "account \(account.name)'s sealed credentials do not open (altered, or copied from another account); sign it in again"
            }
        }
        return problems
    }

    /// The newest audit-log entries, newest first.
    public func events(limit: Int = 50) throws(StoreError) -> [AuditEvent] {
        try read { db in
            try EventRecord.order(Column("id").desc).limit(limit).fetchAll(db).map {
                AuditEvent(at: $0.at, kind: $0.kind, accountName: $0.accountName, detail: $0.detail)
            }
        }
    }

    /// The default Codex home set with ``setDefaultCodexHome(_:)``.
    public func defaultCodexHome() throws(StoreError) -> String? {
        try read { db in try db.setting(.codexHome).map { String(decoding: $0, as: UTF8.self) } }
    }

    /// How long usage readings are kept, in seconds, when set (`chappie config set usage-retention`).
    public func usageRetention() throws(StoreError) -> Double? {
        try read { db in try db.setting(.usageRetention).flatMap { Double(String(decoding: $0, as: UTF8.self)) } }
    }

    /// Sets (or with `nil` clears) how long usage readings are kept, in seconds.
    public func setUsageRetention(_ seconds: Double?) throws(StoreError) {
        try write { db in
            try db.setSetting(.usageRetention, seconds.map { Data(String($0).utf8) })
            try db.record("setting_changed", account: nil, detail: seconds.map { "usage-retention = \(Int($0)) s" } ?? "usage-retention cleared")
        }
    }

    /// How many credentials each key id seals (normally all under the store's key).
    public func credentialCountsByKey() throws(StoreError) -> [String: Int] {
        try read { db in
            var counts: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key_id, count(*) AS n FROM credentials GROUP BY key_id") {
                counts[row["key_id"]] = row["n"]
            }
            return counts
        }
    }

    // MARK: Writing

    /// Stores an account's tokens: updates the account with the same ChatGPT account and user (or,
    /// lacking those ids, the same e-mail), else creates one.
    ///
    /// - Parameters:
    ///   - info: Who the account is (from its id_token).
    ///   - credentials: The tokens.
    ///   - accessTokenExpiresAt: The access token's `exp`.
    ///   - refreshedAt: When the tokens were obtained.
    ///   - name: The name to give it; by default the e-mail's local part (made unique), or the
    ///     existing name of an updated account.
    ///   - event: The audit-log kind, such as `imported`.
    /// - Returns: The account, and whether it was created.
    public func save(
        info: ChappieAccountInfo, credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date?,
        name: AccountName?, event: String
    ) throws(StoreError) -> (account: Account, created: Bool) {
        let saved = try write { db in
            let now = Date()
            var record = try Self.matching(info, db) ?? AccountRecord(
                id: nil, name: "", email: nil, chatgptAccountId: nil, chatgptUserId: nil, plan: nil, isFedramp: false,
                status: AccountStatus.ok.rawValue, reservePercent: nil, createdAt: now, updatedAt: now)
            let created = record.id == nil
            if let name, name.rawValue != record.name {
                if try AccountRecord.filter(Column("name") == name.rawValue).fetchCount(db) > 0 {
                    throw StoreError(.nameTaken, "another account is already named \(name); choose another name")
                }
                record.name = name.rawValue
            } else if created {
                record.name = try Self.freeName(for: info, db)
            }
            record.email = info.email
            record.chatgptAccountId = info.accountID
            record.chatgptUserId = info.userID
            record.plan = info.plan?.rawValue
            record.isFedramp = info.isFedRAMPAccount
            record.status = AccountStatus.ok.rawValue
            record.accessExpiresAt = accessTokenExpiresAt
            record.lastRefreshAt = refreshedAt
            record.lastError = nil
            record.updatedAt = now
            try record.save(db)
            let id = record.id!
            try seal(credentials, accountID: id, db)
            try db.record(event, account: record, detail: created ? "new account" : "tokens updated")
            return (try record.account(activeID: try Self.activeID(db)), created)
        }
        removeRecoveryFile(for: saved.0.id)
        return saved
    }

    /// Renames an account.
    ///
    /// - Throws: ``StoreError`` `.notFound` or `.nameTaken`.
    public func rename(_ name: AccountName, to newName: AccountName) throws(StoreError) {
        try write { db in
            var record = try Self.record(named: name, db)
            guard name != newName else { return }
            if try AccountRecord.filter(Column("name") == newName.rawValue).fetchCount(db) > 0 {
                throw StoreError(.nameTaken, "another account is already named \(newName); choose another name")
            }
            record.name = newName.rawValue
            record.updatedAt = Date()
            try record.update(db)
            try db.record("renamed", account: record, detail: "from \(name)")
        }
    }

    /// Removes an account, its credentials and its usage history; the audit log keeps its name.
    public func remove(_ name: AccountName) throws(StoreError) {
        let id = try write { db in
            let record = try Self.record(named: name, db)
            if try Self.activeID(db) == record.id { try db.setSetting(.activeAccount, nil) }
            try db.record("removed", account: record)
            _ = try record.delete(db)
            return record.id!
        }
        removeRecoveryFile(for: id)
    }

    /// Makes an account the active one and, with `codexHome`, the owner of that Codex home, in one
    /// transaction: any other account that owned the home no longer does (one owner per home).
    ///
    /// - Parameters:
    ///   - name: The account.
    ///   - codexHome: The Codex home (a standardised path) whose `auth.json` now holds it.
    ///   - detail: The audit-log detail.
    public func activate(_ name: AccountName, owningCodexHome codexHome: String? = nil, detail: String = "") throws(StoreError) -> Account {
        try write { db in
            var record = try Self.record(named: name, db)
            if let codexHome {
                try db.execute(
                    sql: "UPDATE accounts SET codex_home = NULL, updated_at = ? WHERE codex_home = ? AND id <> ?",
                    arguments: [Date(), codexHome, record.id])
                record.codexHome = codexHome
                record.updatedAt = Date()
                try record.update(db)
            }
            try db.setSetting(.activeAccount, Data(String(record.id!).utf8))
            try db.record("switched", account: record, detail: detail)
            return try record.account(activeID: record.id)
        }
    }

    /// The account that owns a Codex home (its `auth.json` is kept with that account's tokens).
    public func codexHomeOwner(_ codexHome: String) throws(StoreError) -> Account? {
        try read { db in
            try AccountRecord.filter(Column("codex_home") == codexHome).fetchOne(db)?.account(activeID: try Self.activeID(db))
        }
    }

    /// The stored account that is the same ChatGPT account and user as `info` (or, lacking those
    /// ids, has the same e-mail), if any.
    public func account(matching info: ChappieAccountInfo) throws(StoreError) -> Account? {
        try read { db in try Self.matching(info, db)?.account(activeID: try Self.activeID(db)) }
    }

    /// The lock file that serialises refreshes of this account across processes.
    public func lockURL(for account: Account) -> URL {
        lockURL(forAccountID: account.id)
    }

    /// The lock file that serialises refreshes of the account with this row id.
    public func lockURL(forAccountID id: Int64) -> URL {
        location.directory.appendingPathComponent("locks/account-\(id).lock")
    }

    /// The account with this row id (as it is now, after another process may have changed it).
    public func account(id: Int64) throws(StoreError) -> Account {
        try read { db in
            guard let record = try AccountRecord.fetchOne(db, key: id) else {
                throw StoreError(.notFound, "the account was removed meanwhile")
            }
            return try record.account(activeID: try Self.activeID(db))
        }
    }

    /// Stores refreshed (or adopted) tokens of an existing account: status back to ok, error cleared.
    public func updateCredentials(
        of account: Account, to credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date, event: String, detail: String = ""
    ) throws(StoreError) -> Account {
        let updated = try write { db in
            guard var record = try AccountRecord.fetchOne(db, key: account.id) else {
                throw StoreError(.notFound, "account \(account.name) was removed meanwhile")
            }
            record.accessExpiresAt = accessTokenExpiresAt
            record.lastRefreshAt = refreshedAt
            record.status = AccountStatus.ok.rawValue
            record.lastError = nil
            record.updatedAt = Date()
            try record.update(db)
            try seal(credentials, accountID: account.id, db)
            try db.record(event, account: record, detail: detail)
            return try record.account(activeID: try Self.activeID(db))
        }
        // The database now holds the newest tokens: a recovery file for the account is stale.
        removeRecoveryFile(for: account.id)
        return updated
    }

    /// Records a failure on an account: with `status` `.reauthRequired` the account needs a new
    /// sign-in (its history is kept); otherwise only the message is kept.
    public func recordFailure(of account: Account, message: String, status: AccountStatus? = nil, event: String) throws(StoreError) {
        try write { db in
            guard var record = try AccountRecord.fetchOne(db, key: account.id) else { return }
            record.lastError = message
            if let status { record.status = status.rawValue }
            record.updatedAt = Date()
            try record.update(db)
            try db.record(event, account: record, detail: message)
        }
    }

    /// Writes an audit-log entry about an account.
    public func recordEvent(_ kind: String, account: Account?, detail: String) throws(StoreError) {
        try write { db in
            let record = try account.flatMap { try AccountRecord.fetchOne(db, key: $0.id) }
            try db.record(kind, account: record, detail: detail)
        }
    }

    /// Sets (or with `nil` clears) an account's reserve: at or above it, the account counts as full.
    public func setReserve(_ percent: Double?, for name: AccountName) throws(StoreError) -> Account {
        try write { db in
            var record = try Self.record(named: name, db)
            record.reservePercent = percent
            record.updatedAt = Date()
            try record.update(db)
            try db.record("setting_changed", account: record, detail: percent.map { "reserve = \($0) %" } ?? "reserve cleared")
            return try record.account(activeID: try Self.activeID(db))
        }
    }

    /// Sets (or with `nil` clears) the Codex home `switch` writes to when none is given.
    public func setDefaultCodexHome(_ path: String?) throws(StoreError) {
        try write { db in
            try db.setSetting(.codexHome, path.map { Data($0.utf8) })
            try db.record("setting_changed", account: nil, detail: path.map { "codex-home = \($0)" } ?? "codex-home cleared")
        }
    }

    /// Reseals every credential and the key check under a new key, in one transaction: either all
    /// of it happens or none.
    ///
    /// - Parameters:
    ///   - newKey: The key to seal with from now on.
    ///   - passphraseKDF: The parameters when the new key comes from a passphrase, else `nil`.
    ///   - beforeCommit: Runs inside the transaction after everything is resealed; if it throws,
    ///     nothing changes. The key-file writer uses it to put the new key in place first.
    /// - Throws: ``StoreError`` `.credentialUnreadable` (nothing changed) if a credential does not
    ///   open with the current key.
    /// - Returns: The store unlocked with the new key.
    public func rotateKey(
        to newKey: SecretKey, passphraseKDF: PassphraseKDF?, beforeCommit: @Sendable () throws -> Void = {}
    ) throws(StoreError) -> AccountStore {
        let oldKey = key
        var settled: [Int64] = []
        try write { db in
            // Tokens waiting in recovery files are adopted first, under the old key, so that they are
            // what gets resealed; one that cannot be opened stops the rotation, since after it
            // nothing could ever open it.
            settled = []
            for record in try CredentialRecord.fetchAll(db) {
                if try settleRecovery(accountID: record.accountId, stored: record, db) != nil { settled.append(record.accountId) }
            }
            for record in try CredentialRecord.fetchAll(db) {
                let opened: SecretBytes
                do {
                    opened = try SealedBox(nonce: record.nonce, ciphertext: record.ciphertext)
                        .open(key: oldKey, associatedData: Self.associatedData(accountID: record.accountId, keyID: record.keyId))
                } catch {
                    let name = try String.fetchOne(db, sql: "SELECT name FROM accounts WHERE id = ?", arguments: [record.accountId]) ?? "?"
                    throw StoreError(
                        .credentialUnreadable,
                        "account \(name)'s credentials do not open with the current key, so the key was not rotated; remove or sign in that account first")
                }
                let box = SealedBox.seal(opened, key: newKey, associatedData: Self.associatedData(accountID: record.accountId, keyID: newKey.id))
                try CredentialRecord(accountId: record.accountId, keyId: newKey.id, nonce: box.nonce, ciphertext: box.ciphertext, updatedAt: Date()).update(db)
            }
            try db.setSetting(.keyCheck, KeyCheck.make(key: newKey))
            try db.setSetting(.keyID, Data(newKey.id.utf8))
            try db.setSetting(.pendingKeyID, nil)
            try db.setSetting(.passphraseKDF, try passphraseKDF.map { try JSONEncoder().encode($0) })
            try db.record("key_rotated", account: nil, detail: "key \(oldKey.id) → \(newKey.id)")
            try beforeCommit()
        }
        for id in settled { removeRecoveryFile(for: id) }
        replaceKey(with: newKey)
        return AccountStore(database: database, key: newKey, keySource: keySource)
    }

    // MARK: Helpers

    func seal(_ credentials: Credentials, accountID: Int64, _ db: Database) throws {
        // Another process may have rotated the key since this store was unlocked: sealing with the
        // old key now would leave a credential nobody can open.
        guard try db.setting(.keyID).map({ String(decoding: $0, as: UTF8.self) }) == key.id else {
            throw StoreError(.wrongKey, "the store's key was rotated by another chappie process; run the command again (restart a daemon); nothing was changed")
        }
        var json = try JSONEncoder().encode(credentials)
        defer { json.zeroize() }
        let box = SealedBox.seal(SecretBytes(copying: json), key: key, associatedData: Self.associatedData(accountID: accountID, keyID: key.id))
        try CredentialRecord(accountId: accountID, keyId: key.id, nonce: box.nonce, ciphertext: box.ciphertext, updatedAt: Date()).save(db)
    }

    /// The associated data that binds a sealed credential to its row and key.
    static func associatedData(accountID: Int64, keyID: String) -> String {
        "chappie/credential/v1 account=\(accountID) key=\(keyID)"
    }

    static func activeID(_ db: Database) throws -> Int64? {
        try db.setting(.activeAccount).flatMap { Int64(String(decoding: $0, as: UTF8.self)) }
    }

    static func record(named name: AccountName, _ db: Database) throws -> AccountRecord {
        guard let record = try AccountRecord.filter(Column("name") == name.rawValue).fetchOne(db) else {
            throw StoreError(.notFound, "there is no account named \(name)")
        }
        return record
    }

    private static func matching(_ info: ChappieAccountInfo, _ db: Database) throws -> AccountRecord? {
        if let accountID = info.accountID, let userID = info.userID {
            return try AccountRecord.filter(Column("chatgpt_account_id") == accountID && Column("chatgpt_user_id") == userID).fetchOne(db)
        }
        if let email = info.email, info.accountID == nil {
            return try AccountRecord.filter(Column("email") == email && Column("chatgpt_account_id") == nil).fetchOne(db)
        }
        return nil
    }

    private static func freeName(for info: ChappieAccountInfo, _ db: Database) throws -> String {
        let base = info.email.flatMap { AccountName.derived(from: String($0.prefix { $0 != "@" })) }?.rawValue ?? "account"
        var candidate = base
        var suffix = 2
        while try AccountRecord.filter(Column("name") == candidate).fetchCount(db) > 0 {
            candidate = String(base.prefix(60)) + "-\(suffix)"
            suffix += 1
        }
        return candidate
    }

    func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try pool.read(body)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.database, "reading the store failed (\(StoreDatabase.reason(error)))")
        }
    }

    func write<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try pool.write(body)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.database, "writing the store failed (\(StoreDatabase.reason(error))); nothing was changed")
        }
    }
}

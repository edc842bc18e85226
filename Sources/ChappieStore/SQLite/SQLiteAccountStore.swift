public import ChappieCore
package import ChappieVault
public import Foundation
import GRDB
import Synchronization

/// The store of one machine: an SQLite database (GRDB, WAL) in the data directory, `flock` files
/// for refresh serialisation, recovery files for tokens a refresh could not commit.
///
/// Every operation runs on GRDB's own queues through its async `read`/`write`, so none blocks the
/// cooperative pool. Writes are transactions; an audit entry is written in the same transaction as
/// the change it records.
///
/// ```swift
/// let store = try StoreDatabase.open(at: location).unlock(with: key)
/// for account in try await store.accounts() { print(account.name) }
/// ```
public final class SQLiteAccountStore: AccountStore {
    let database: StoreDatabase
    private let currentKey: Mutex<SecretKey>
    /// Whether credentials sealed bound to row ids still open (until the one-time reseal to UUIDs).
    private let rowBindingAccepted: Mutex<Bool>
    /// Reads the key again from where it came from (a key file), after another process rotated it;
    /// `nil` for a passphrase, which cannot be read again.
    let keySource: (@Sendable () throws -> SecretKey)?

    init(database: StoreDatabase, key: SecretKey, keySource: (@Sendable () throws -> SecretKey)?, acceptsRowBoundCredentials: Bool) {
        self.database = database
        self.currentKey = Mutex(key)
        self.keySource = keySource
        self.rowBindingAccepted = Mutex(acceptsRowBoundCredentials)
    }

    /// Whether some credentials may still be bound to row ids (stores before migration 0004 that
    /// have not been resealed yet); once they are resealed, a row-bound blob no longer opens.
    public var acceptsRowBoundCredentials: Bool { rowBindingAccepted.withLock { $0 } }

    func stopAcceptingRowBoundCredentials() {
        rowBindingAccepted.withLock { $0 = false }
    }

    package var key: SecretKey { currentKey.withLock { $0 } }

    func replaceKey(with newKey: SecretKey) {
        currentKey.withLock { $0 = newKey }
    }

    var pool: DatabasePool { database.pool }

    public var location: StoreLocation { database.location }

    // MARK: Accounts

    public func accounts() async throws(StoreError) -> [Account] {
        try await read { db in
            let active = try Self.activeID(db)
            return try AccountRecord.order(AccountRecord.Columns.name).fetchAll(db).map { record throws(StoreError) in
                try record.account(activeID: active)
            }
        }
    }

    public func account(named name: AccountName) async throws(StoreError) -> Account {
        try await read { db in
            guard let record = try AccountRecord.filter(AccountRecord.Columns.name == name.rawValue).fetchOne(db) else {
                let names = try String.fetchAll(db, AccountRecord.select(AccountRecord.Columns.name).order(AccountRecord.Columns.name))
                throw StoreError(
                    .notFound,
                    names.isEmpty
                        ? "there is no account named \(name): no account is stored yet"
                        : "there is no account named \(name); the accounts are: \(names.joined(separator: ", "))")
            }
            return try record.account(activeID: try Self.activeID(db))
        }
    }

    public func account(id: Int64) async throws(StoreError) -> Account {
        try await read { db in
            guard let record = try AccountRecord.fetchOne(db, key: id) else {
                throw StoreError(.notFound, "the account was removed meanwhile")
            }
            return try record.account(activeID: try Self.activeID(db))
        }
    }

    public func activeAccount() async throws(StoreError) -> Account? {
        try await read { db in
            guard let id = try Self.activeID(db), let record = try AccountRecord.fetchOne(db, key: id) else { return nil }
            return try record.account(activeID: id)
        }
    }

    public func account(matching info: ChappieAccountInfo) async throws(StoreError) -> Account? {
        try await read { db in try Self.matching(info, db)?.account(activeID: try Self.activeID(db)) }
    }

    public func codexHomeOwner(_ codexHome: String) async throws(StoreError) -> Account? {
        try await read { db in
            try AccountRecord.filter(AccountRecord.Columns.codexHome == codexHome).fetchOne(db)?.account(activeID: try Self.activeID(db))
        }
    }

    package func save(
        info: ChappieAccountInfo, credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date?, name: AccountName?,
        event: AuditEventKind
    ) async throws(StoreError) -> (account: Account, created: Bool) {
        let saved = try await write { db in
            let now = Date()
            var record = try Self.matching(info, db) ?? AccountRecord.new(at: now)
            let created = record.id == nil
            if let id = record.id { try Self.refuseIfMoving(id, name: record.name, db) }
            if let name, name.rawValue != record.name {
                if let holder = try AccountRecord.filter(AccountRecord.Columns.name == name.rawValue).fetchOne(db) {
                    throw StoreError.signedInAsAnother(name, holder: holder.email, signedIn: info.email)
                }
                record.name = name.rawValue
            } else if created {
                record.name = try Self.freeName(for: info, db)
            }
            record.signIn(info, accessExpiresAt: accessTokenExpiresAt, refreshedAt: refreshedAt, at: now)
            try record.save(db)
            try self.seal(credentials, of: record, db)
            try db.record(event, account: record, detail: created ? "new account" : "tokens updated")
            return (try record.account(activeID: try Self.activeID(db)), created)
        }
        removeRecoveryFile(for: saved.0.id)
        return saved
    }

    public func rename(_ name: AccountName, to newName: AccountName) async throws(StoreError) {
        try await write { db in
            var record = try Self.record(named: name, db)
            guard name != newName else { return }
            if try AccountRecord.filter(AccountRecord.Columns.name == newName.rawValue).fetchCount(db) > 0 {
                throw StoreError(.nameTaken, "another account is already named \(newName); choose another name")
            }
            record.name = newName.rawValue
            record.updatedAt = Date()
            try record.update(db)
            try db.record(.renamed, account: record, detail: "from \(name)")
        }
    }

    public func remove(_ name: AccountName, note: String) async throws(StoreError) {
        let id = try await write { db in try Self.deleteAccount(named: name, note: note, db) }
        removeRecoveryFile(for: id)
    }

    /// Inside a write transaction: deletes an account (its credentials and usage go with it) and
    /// logs it. Returns its id.
    static func deleteAccount(named name: AccountName, note: String, _ db: Database) throws -> Int64 {
        let record = try record(named: name, db)
        if try activeID(db) == record.id { try db.setSetting(.activeAccount, nil) }
        try db.record(.removed, account: record, detail: RemovedLogin.detail(try record.account(activeID: nil).info, note: note))
        _ = try record.delete(db)
        return record.id!
    }

    public func activate(_ name: AccountName, owningCodexHome codexHome: String?, detail: String) async throws(StoreError) -> Account {
        try await write { db in
            var record = try Self.record(named: name, db)
            if let codexHome { try Self.give(codexHome, to: &record, db) }
            try db.setSetting(.activeAccount, Data(String(record.id!).utf8))
            try db.record(.switched, account: record, detail: detail)
            return try record.account(activeID: record.id)
        }
    }

    public func claimCodexHome(_ codexHome: String, for account: Account) async throws(StoreError) -> Account {
        try await write { db in
            guard var record = try AccountRecord.fetchOne(db, key: account.id) else { throw StoreError(.notFound, "no account \(account.name)") }
            if record.codexHome == nil {
                try Self.give(codexHome, to: &record, db)
                try db.record(.codexHomeClaimed, account: record, detail: "codex home \(codexHome)")
            }
            return try record.account(activeID: try Self.activeID(db))
        }
    }

    /// Inside a write transaction: makes `record` the one owner of a Codex home.
    private static func give(_ codexHome: String, to record: inout AccountRecord, _ db: Database) throws {
        try AccountRecord
            .filter(AccountRecord.Columns.codexHome == codexHome && AccountRecord.Columns.id != record.id)
            .updateAll(db, AccountRecord.Columns.codexHome.set(to: nil), AccountRecord.Columns.updatedAt.set(to: Date()))
        record.codexHome = codexHome
        record.updatedAt = Date()
        try record.update(db)
    }

    public func setReserve(_ percent: Double?, for name: AccountName) async throws(StoreError) -> Account {
        try await write { db in
            var record = try Self.record(named: name, db)
            record.reservePercent = percent
            record.updatedAt = Date()
            try record.update(db)
            try db.record(.settingChanged, account: record, detail: percent.map { "reserve = \($0) %" } ?? "reserve cleared")
            return try record.account(activeID: try Self.activeID(db))
        }
    }

    public func updateIdentity(of account: Account, to info: ChappieAccountInfo) async throws(StoreError) -> Account {
        try await write { db in
            guard var record = try AccountRecord.fetchOne(db, key: account.id) else {
                throw StoreError(.notFound, "account \(account.name) was removed meanwhile")
            }
            if let change = record.takeIdentity(info) {
                record.updatedAt = Date()
                try record.update(db)
                try db.record(.identityChanged, account: record, detail: change)
            }
            return try record.account(activeID: try Self.activeID(db))
        }
    }

    // MARK: Audit log and settings

    package func events(_ query: AuditQuery) async throws(StoreError) -> [AuditEvent] {
        var request = EventRecord.order(EventRecord.Columns.id.desc)
        if let kinds = query.kinds { request = request.filter(kinds.contains(EventRecord.Columns.kind)) }
        if !query.excludedKinds.isEmpty { request = request.filter(!query.excludedKinds.contains(EventRecord.Columns.kind)) }
        if let name = query.accountName { request = request.filter(EventRecord.Columns.accountName == name) }
        if let since = query.since { request = request.filter(EventRecord.Columns.at >= since) }
        return try await read { [request] db in
            try request.limit(query.limit).fetchAll(db).map {
                AuditEvent(at: $0.at, kind: $0.kind, accountName: $0.accountName, detail: $0.detail)
            }
        }
    }

    package func recordEvent(_ kind: AuditEventKind, account: Account?, detail: String) async throws(StoreError) {
        try await write { db in
            let record = try account.flatMap { try AccountRecord.fetchOne(db, key: $0.id) }
            try db.record(kind, account: record, detail: detail)
        }
    }

    public func defaultCodexHome() async throws(StoreError) -> String? {
        try await read { db in try db.setting(.codexHome).map { String(decoding: $0, as: UTF8.self) } }
    }

    public func setDefaultCodexHome(_ path: String?) async throws(StoreError) {
        try await write { db in
            try db.setSetting(.codexHome, path.map { Data($0.utf8) })
            try db.record(.settingChanged, account: nil, detail: path.map { "codex-home = \($0)" } ?? "codex-home cleared")
        }
    }

    public func usageRetention() async throws(StoreError) -> Double? {
        try await read { db in try db.setting(.usageRetention).flatMap { Double(String(decoding: $0, as: UTF8.self)) } }
    }

    public func setUsageRetention(_ seconds: Double?) async throws(StoreError) {
        try await write { db in
            try db.setSetting(.usageRetention, seconds.map { Data(String($0).utf8) })
            try db.record(.settingChanged, account: nil, detail: seconds.map { "usage-retention = \(Int($0)) s" } ?? "usage-retention cleared")
        }
    }

    package func trafficSetting(_ setting: TrafficSetting) async throws(StoreError) -> String? {
        try await read { db in try db.setting(setting.key).map { String(decoding: $0, as: UTF8.self) } }
    }

    package func setTrafficSetting(_ setting: TrafficSetting, _ value: String?) async throws(StoreError) {
        try await write { db in
            try db.setSetting(setting.key, value.map { Data($0.utf8) })
            try db.record(.settingChanged, account: nil, detail: value.map { "\(setting.rawValue) = \($0)" } ?? "\(setting.rawValue) cleared")
        }
    }

    // MARK: Serialisation

    nonisolated(nonsending) public func withRefreshLock<T>(onAccounts ids: [Int64], _ body: () async throws -> T) async throws -> T {
        var locks: [FileLock] = []
        for id in Set(ids).sorted() { locks.append(try await FileLock.acquireRefreshLock(lockURL(forAccountID: id))) }
        defer { withExtendedLifetime(locks) {} }
        return try await body()
    }

    /// The lock file that serialises refreshes of the account with this id across processes.
    public func lockURL(forAccountID id: Int64) -> URL {
        location.directory.appendingPathComponent("locks/account-\(id).lock")
    }

    // MARK: Helpers

    static func activeID(_ db: Database) throws -> Int64? {
        try db.setting(.activeAccount).flatMap { Int64(String(decoding: $0, as: UTF8.self)) }
    }

    static func record(named name: AccountName, _ db: Database) throws -> AccountRecord {
        guard let record = try AccountRecord.filter(AccountRecord.Columns.name == name.rawValue).fetchOne(db) else {
            throw StoreError(.notFound, "there is no account named \(name)")
        }
        return record
    }

    private static func matching(_ info: ChappieAccountInfo, _ db: Database) throws -> AccountRecord? {
        if let accountID = info.accountID, let userID = info.userID {
            return
                try AccountRecord
                .filter(AccountRecord.Columns.chatgptAccountId == accountID && AccountRecord.Columns.chatgptUserId == userID).fetchOne(db)
        }
        if let email = info.email, info.accountID == nil {
            return try AccountRecord.filter(AccountRecord.Columns.email == email && AccountRecord.Columns.chatgptAccountId == nil).fetchOne(db)
        }
        return nil
    }

    private static func freeName(for info: ChappieAccountInfo, _ db: Database) throws -> String {
        let base = info.email.flatMap { AccountName.derived(from: String($0.prefix { $0 != "@" })) }?.rawValue ?? "account"
        var candidate = base
        var suffix = 2
        while try AccountRecord.filter(AccountRecord.Columns.name == candidate).fetchCount(db) > 0 {
            candidate = String(base.prefix(60)) + "-\(suffix)"
            suffix += 1
        }
        return candidate
    }

    /// Reads on one of GRDB's reader connections, off the cooperative pool.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(StoreError) -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw Self.storeError(error, reading: true)
        }
    }

    /// Writes in one transaction on GRDB's writer queue, off the cooperative pool.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(StoreError) -> T {
        do {
            return try await pool.write(body)
        } catch {
            throw Self.storeError(error, reading: false)
        }
    }

    /// Reads synchronously: only for opening the store, which is synchronous by nature.
    func readNow<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try pool.read(body)
        } catch {
            throw Self.storeError(error, reading: true)
        }
    }

    /// Writes synchronously: only for opening the store (adopting recovery files, resealing).
    func writeNow<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try pool.write(body)
        } catch {
            throw Self.storeError(error, reading: false)
        }
    }

    private static func storeError(_ error: any Error, reading: Bool) -> StoreError {
        if let error = error as? StoreError { return error }
        if error is CancellationError {
            return StoreError(.database, reading ? "reading the store was cancelled" : "writing the store was cancelled; nothing was changed")
        }
        // The driver's error stays underneath: its text may hold the statement, so it is not shown.
        let underlying = error as? DatabaseError
        return reading
            ? StoreError(.database, "reading the store failed (\(StoreDatabase.reason(error)))", underlying: underlying)
            : StoreError(.database, "writing the store failed (\(StoreDatabase.reason(error))); nothing was changed", underlying: underlying)
    }
}

package import ChappieStore
package import ChappieCore
package import ChappieVault
package import Foundation
import PostgresNIO
import Synchronization

/// The team pool's store: the accounts of several machines in one PostgreSQL database
/// (docs/team-pool.md). Credentials are sealed by the machines' shared key before they reach the
/// database, bound to the account's UUID exactly as on SQLite, so the database never sees a token
/// and a blob moves between backends unchanged.
///
/// What is the machine's own stays local or is kept per machine: the data directory (locks,
/// recovery files, the key file), the active account and default Codex home (per machine in the
/// pool), and Codex homes, which are paths on one machine (an account's home is owned fleet-wide:
/// it is in at most one home on one machine).
///
/// Refreshes are serialised across machines by a PostgreSQL advisory lock per account, held in a
/// transaction on a connection of its own (released by the server when the holder dies), after the
/// local `flock` that orders this machine's own processes.
package final class PostgresAccountStore: AccountStore {
    /// The database.
    package let database: PoolDatabase
    package let location: StoreLocation
    let currentKey: Mutex<SecretKey>
    let keySource: (@Sendable () throws -> SecretKey)?
    /// This data directory's own id in the pool (its `pool-instance` file): what tells its
    /// unfinished refreshes from another's that runs under the same machine name.
    let instance: UUID

    init(database: PoolDatabase, location: StoreLocation, instance: UUID, key: SecretKey, keySource: (@Sendable () throws -> SecretKey)?) {
        self.database = database
        self.location = location
        self.instance = instance
        self.currentKey = Mutex(key)
        self.keySource = keySource
    }

    package var key: SecretKey { currentKey.withLock { $0 } }

    /// This machine's name in the pool.
    package var machine: String { database.machine }

    static var logger: Logger { PoolDatabase.logger }

    // MARK: Accounts

    /// The columns of `accounts` every account query reads, in the order ``record(_:)`` decodes.
    static let accountColumns = """
        id, uuid, name, email, chatgpt_account_id, chatgpt_user_id, plan, is_fedramp, status, access_expires_at, last_refresh_at, last_error, \
        codex_home_machine, codex_home, reserve_percent, created_at, updated_at, max_leases, auto_switch, priority
        """

    /// Reads the accounts a query returns (it selects ``accountColumns``).
    func records(_ query: PostgresQuery, _ connection: PostgresConnection) async throws -> [AccountRecord] {
        var records: [AccountRecord] = []
        for try await row in try await connection.query(query, logger: Self.logger) {
            let (
                id, uuid, name, email, accountID, userID, plan, fedramp, status, expires, refreshed, lastError, homeMachine, home, reserve,
                created, updated, maxLeases, autoSwitch, priority
            ) = try row.decode(
                (
                    Int64, UUID, String, String?, String?, String?, String?, Bool, String, Date?, Date?, String?, String?, String?, Double?,
                    Date, Date, Int, Bool, Int
                ).self)
            records.append(
                AccountRecord(
                    id: id, uuid: uuid.uuidString.lowercased(), name: name, email: email, chatgptAccountId: accountID, chatgptUserId: userID,
                    plan: plan, isFedramp: fedramp, status: status, accessExpiresAt: expires, lastRefreshAt: refreshed, lastError: lastError,
                    // A Codex home is a path on one machine: on the others, the account has none here.
                    codexHome: homeMachine == machine ? home : nil,
                    reservePercent: reserve, maxLeases: maxLeases, autoSwitch: autoSwitch, priority: priority, createdAt: created,
                    updatedAt: updated))
        }
        return records
    }

    /// This machine's active account id.
    func activeID(_ connection: PostgresConnection) async throws -> Int64? {
        try await PoolDatabase.machineSetting(.activeAccount, machine: machine, connection).flatMap { Int64(String(decoding: $0, as: UTF8.self)) }
    }

    func accountsNow(_ connection: PostgresConnection) async throws -> [Account] {
        let active = try await activeID(connection)
        return try await records("SELECT \(unescaped: Self.accountColumns) FROM accounts ORDER BY name COLLATE \"C\"", connection).map {
            record throws(StoreError) in try record.account(activeID: active)
        }
    }

    package func accounts() async throws(StoreError) -> [Account] {
        try await database.read { connection in try await self.accountsNow(connection) }
    }

    package func account(named name: AccountName) async throws(StoreError) -> Account {
        try await database.read { connection in
            guard let record = try await self.record(named: name, connection) else {
                let names = try await self.accountsNow(connection).map(\.name.rawValue)
                throw StoreError(
                    .notFound,
                    names.isEmpty
                        ? "there is no account named \(name): no account is stored yet"
                        : "there is no account named \(name); the accounts are: \(names.joined(separator: ", "))")
            }
            return try record.account(activeID: try await self.activeID(connection))
        }
    }

    package func account(id: Int64) async throws(StoreError) -> Account {
        try await database.read { connection in
            guard let record = try await self.record(id: id, connection) else { throw StoreError(.notFound, "the account was removed meanwhile") }
            return try record.account(activeID: try await self.activeID(connection))
        }
    }

    package func activeAccount() async throws(StoreError) -> Account? {
        try await database.read { connection in
            guard let id = try await self.activeID(connection), let record = try await self.record(id: id, connection) else { return nil }
            return try record.account(activeID: id)
        }
    }

    package func account(matching info: ChappieAccountInfo) async throws(StoreError) -> Account? {
        try await database.read { connection in
            try await self.matching(info, connection)?.account(activeID: try await self.activeID(connection))
        }
    }

    package func codexHomeOwner(_ codexHome: String) async throws(StoreError) -> Account? {
        try await database.read { connection in
            let query: PostgresQuery =
                "SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE codex_home_machine = \(self.machine) AND codex_home = \(codexHome)"
            return try await self.records(query, connection).first?.account(activeID: try await self.activeID(connection))
        }
    }

    package func save(
        info: ChappieAccountInfo, credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date?, name: AccountName?,
        event: AuditEventKind
    ) async throws(StoreError) -> (account: Account, created: Bool) {
        let key = self.key
        let saved = try await database.write { connection in
            let now = Date()
            var record = try await self.matching(info, connection) ?? AccountRecord.new(at: now)
            let created = record.id == nil
            if let name, name.rawValue != record.name {
                if let holder = try await self.record(named: name, connection) {
                    throw StoreError.signedInAsAnother(name, holder: holder.email, signedIn: info.email)
                }
                record.name = name.rawValue
            } else if created {
                record.name = try await self.freeName(for: info, connection)
            }
            record.signIn(info, accessExpiresAt: accessTokenExpiresAt, refreshedAt: refreshedAt, at: now)
            if created {
                let rows = try await connection.query(
                    """
                    INSERT INTO accounts (uuid, name, email, chatgpt_account_id, chatgpt_user_id, plan, is_fedramp, status, access_expires_at,
                        last_refresh_at, created_at, updated_at)
                    VALUES (\(UUID(uuidString: record.uuid)!), \(record.name), \(record.email), \(record.chatgptAccountId), \(record.chatgptUserId),
                        \(record.plan), \(record.isFedramp), \(record.status), \(record.accessExpiresAt), \(record.lastRefreshAt), \(record.createdAt),
                        \(record.updatedAt))
                    RETURNING id
                    """, logger: Self.logger)
                for try await (id) in rows.decode(Int64.self) { record.id = id }
            } else {
                try await connection.query(
                    """
                    UPDATE accounts SET name = \(record.name), email = \(record.email), chatgpt_account_id = \(record.chatgptAccountId),
                        chatgpt_user_id = \(record.chatgptUserId), plan = \(record.plan), is_fedramp = \(record.isFedramp), status = \(record.status),
                        access_expires_at = \(record.accessExpiresAt), last_refresh_at = \(record.lastRefreshAt), last_error = NULL,
                        updated_at = \(record.updatedAt)
                    WHERE id = \(record.id!)
                    """, logger: Self.logger)
            }
            try await self.seal(credentials, of: record, key: key, connection)
            // New tokens from a sign-in: an unfinished refresh of the old ones no longer matters.
            try await connection.query("DELETE FROM refresh_intents WHERE account_id = \(record.id!)", logger: Self.logger)
            try await self.audit(event, account: record, detail: created ? "new account" : "tokens updated", connection)
            return (try record.account(activeID: try await self.activeID(connection)), created)
        }
        removeRecoveryFile(for: saved.0)
        return saved
    }

    package func rename(_ name: AccountName, to newName: AccountName) async throws(StoreError) {
        try await database.write { connection in
            guard var record = try await self.record(named: name, connection) else {
                throw StoreError(.notFound, "there is no account named \(name)")
            }
            guard name != newName else { return }
            if try await self.record(named: newName, connection) != nil {
                throw StoreError(.nameTaken, "another account is already named \(newName); choose another name")
            }
            record.name = newName.rawValue
            try await connection.query(
                "UPDATE accounts SET name = \(newName.rawValue), updated_at = \(Date()) WHERE id = \(record.id!)", logger: Self.logger)
            try await self.audit(.renamed, account: record, detail: "from \(name)", connection)
        }
    }

    package func remove(_ name: AccountName, note: String) async throws(StoreError) {
        let removed = try await database.write { connection in
            guard let record = try await self.record(named: name, connection) else {
                throw StoreError(.notFound, "there is no account named \(name)")
            }
            let account = try record.account(activeID: nil)
            try await self.audit(.removed, account: record, detail: RemovedLogin.detail(account.info, note: note), connection)
            // Whichever machines had it active no longer do.
            try await connection.query(
                "DELETE FROM machine_settings WHERE key = \(SettingKey.activeAccount.rawValue) AND value = \(Data(String(account.id).utf8))",
                logger: Self.logger)
            try await connection.query("DELETE FROM accounts WHERE id = \(account.id)", logger: Self.logger)
            return account
        }
        removeRecoveryFile(for: removed)
    }

    package func activate(_ name: AccountName, owningCodexHome codexHome: String?, detail: String) async throws(StoreError) -> Account {
        try await database.write { connection in
            guard var record = try await self.record(named: name, connection, forUpdate: true) else {
                throw StoreError(.notFound, "there is no account named \(name)")
            }
            if let codexHome { try await self.give(codexHome, to: &record, connection) }
            try await PoolDatabase.setMachineSetting(.activeAccount, machine: self.machine, Data(String(record.id!).utf8), connection)
            try await self.audit(.switched, account: record, detail: detail, connection)
            return try record.account(activeID: record.id)
        }
    }

    package func claimCodexHome(_ codexHome: String, for account: Account) async throws(StoreError) -> Account {
        try await database.write { connection in
            guard var record = try await self.record(id: account.id, connection, forUpdate: true) else {
                throw StoreError(.notFound, "no account \(account.name)")
            }
            if record.codexHome == nil {
                try await self.give(codexHome, to: &record, connection)
                try await self.audit(.codexHomeClaimed, account: record, detail: "codex home \(codexHome)", connection)
            }
            return try record.account(activeID: try await self.activeID(connection))
        }
    }

    /// Inside a write transaction, the account's row locked: makes it the one owner of a Codex home
    /// on this machine. Refused while its tokens are in a Codex home on another machine: that
    /// machine's Codex refreshes them without chappie's lock, and two homes would redeem one token.
    private func give(_ codexHome: String, to record: inout AccountRecord, _ connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            "SELECT codex_home_machine, codex_home FROM accounts WHERE id = \(record.id!)", logger: Self.logger)
        for try await (otherMachine, otherHome) in rows.decode((String?, String?).self) {
            if let otherMachine, otherMachine != machine {
                throw StoreError(
                    .inUseElsewhere,
                    "account \(record.name)'s tokens are in the Codex home \(otherHome ?? "?") on machine \(otherMachine), whose Codex refreshes them on its own; switch that home to another account there first (chappie accounts switch OTHER on \(otherMachine)); nothing was changed"
                )
            }
        }
        let now = Date()
        try await connection.query(
            """
            UPDATE accounts SET codex_home_machine = NULL, codex_home = NULL, updated_at = \(now)
            WHERE codex_home_machine = \(machine) AND codex_home = \(codexHome) AND id <> \(record.id!)
            """, logger: Self.logger)
        try await connection.query(
            "UPDATE accounts SET codex_home_machine = \(machine), codex_home = \(codexHome), updated_at = \(now) WHERE id = \(record.id!)",
            logger: Self.logger)
        record.codexHome = codexHome
        record.updatedAt = now
    }

    package func setReserve(_ percent: Double?, for name: AccountName) async throws(StoreError) -> Account {
        try await database.write { connection in
            guard var record = try await self.record(named: name, connection) else {
                throw StoreError(.notFound, "there is no account named \(name)")
            }
            record.reservePercent = percent
            try await connection.query(
                "UPDATE accounts SET reserve_percent = \(percent), updated_at = \(Date()) WHERE id = \(record.id!)", logger: Self.logger)
            try await self.audit(.settingChanged, account: record, detail: percent.map { "reserve = \($0) %" } ?? "reserve cleared", connection)
            return try record.account(activeID: try await self.activeID(connection))
        }
    }

    package func setChoice(autoSwitch: Bool?, priority: Int?, for name: AccountName) async throws(StoreError) -> Account {
        try await database.write { connection in
            guard var record = try await self.record(named: name, connection) else {
                throw StoreError(.notFound, "there is no account named \(name)")
            }
            record.autoSwitch = autoSwitch ?? record.autoSwitch
            record.priority = priority ?? record.priority
            try await connection.query(
                "UPDATE accounts SET auto_switch = \(record.autoSwitch), priority = \(record.priority), updated_at = \(Date()) WHERE id = \(record.id!)",
                logger: Self.logger)
            try await self.audit(
                .settingChanged, account: record, detail: AccountRecord.choiceDetail(autoSwitch: autoSwitch, priority: priority), connection)
            return try record.account(activeID: try await self.activeID(connection))
        }
    }

    package func updateIdentity(of account: Account, to info: ChappieAccountInfo) async throws(StoreError) -> Account {
        try await database.write { connection in
            guard var record = try await self.record(id: account.id, connection, forUpdate: true) else {
                throw StoreError(.notFound, "account \(account.name) was removed meanwhile")
            }
            if let change = record.takeIdentity(info) {
                try await connection.query(
                    "UPDATE accounts SET email = \(record.email), plan = \(record.plan), updated_at = \(Date()) WHERE id = \(account.id)",
                    logger: Self.logger)
                try await self.audit(.identityChanged, account: record, detail: change, connection)
            }
            return try record.account(activeID: try await self.activeID(connection))
        }
    }

    // MARK: Audit log and settings

    package func events(_ query: AuditQuery) async throws(StoreError) -> [AuditEvent] {
        // Conditions not given are bound as NULL or an empty list and hold for every row.
        let (kinds, excluded) = (query.kinds ?? [], query.excludedKinds)
        let (anyKind, name, since, limit) = (query.kinds == nil, query.accountName, query.since, query.limit)
        return try await database.read { connection in
            var events: [AuditEvent] = []
            let rows = try await connection.query(
                """
                SELECT at, kind, account_name, detail, machine FROM events
                WHERE (\(anyKind) OR kind = ANY(\(kinds))) AND NOT (kind = ANY(\(excluded)))
                  AND (\(name)::text IS NULL OR account_name = \(name)) AND (\(since)::timestamptz IS NULL OR at >= \(since))
                ORDER BY id DESC LIMIT \(limit)
                """, logger: Self.logger)
            for try await (at, kind, name, detail, machine) in rows.decode((Date, String, String?, String, String).self) {
                events.append(
                    AuditEvent(at: at, kind: kind, accountName: name, detail: detail.isEmpty ? "on \(machine)" : "\(detail) (on \(machine))"))
            }
            return events
        }
    }

    package func recordEvent(_ kind: AuditEventKind, account: Account?, detail: String) async throws(StoreError) {
        try await database.write { connection in
            let record = try await account.asyncFlatMap { try await self.record(id: $0.id, connection) }
            try await self.audit(kind, account: record, detail: detail, connection)
        }
    }

    package func defaultCodexHome() async throws(StoreError) -> String? {
        try await database.read { connection in
            try await PoolDatabase.machineSetting(.codexHome, machine: self.machine, connection).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    package func setDefaultCodexHome(_ path: String?) async throws(StoreError) {
        try await database.write { connection in
            try await PoolDatabase.setMachineSetting(.codexHome, machine: self.machine, path.map { Data($0.utf8) }, connection)
            try await self.audit(.settingChanged, account: nil, detail: path.map { "codex-home = \($0)" } ?? "codex-home cleared", connection)
        }
    }

    package func usageRetention() async throws(StoreError) -> Double? {
        try await database.read { connection in
            try await PoolDatabase.setting(.usageRetention, connection).flatMap { Double(String(decoding: $0, as: UTF8.self)) }
        }
    }

    package func setUsageRetention(_ seconds: Double?) async throws(StoreError) {
        try await database.write { connection in
            try await PoolDatabase.setSetting(.usageRetention, seconds.map { Data(String($0).utf8) }, connection)
            try await self.audit(
                .settingChanged, account: nil, detail: seconds.map { "usage-retention = \(Int($0)) s" } ?? "usage-retention cleared", connection)
        }
    }

    /// The originator is the pool's; a certificate file is a path on one machine, so it is that
    /// machine's, as `codex-home` is.
    package func trafficSetting(_ setting: TrafficSetting) async throws(StoreError) -> String? {
        try await database.read { connection in
            let value =
                setting.isPerMachine
                ? try await PoolDatabase.machineSetting(setting.key, machine: self.machine, connection)
                : try await PoolDatabase.setting(setting.key, connection)
            return value.map { String(decoding: $0, as: UTF8.self) }
        }
    }

    package func setTrafficSetting(_ setting: TrafficSetting, _ value: String?) async throws(StoreError) {
        try await database.write { connection in
            if setting.isPerMachine {
                try await PoolDatabase.setMachineSetting(setting.key, machine: self.machine, value.map { Data($0.utf8) }, connection)
            } else {
                try await PoolDatabase.setSetting(setting.key, value.map { Data($0.utf8) }, connection)
            }
            try await self.audit(
                .settingChanged, account: nil, detail: value.map { "\(setting.rawValue) = \($0)" } ?? "\(setting.rawValue) cleared", connection)
        }
    }

    // MARK: Helpers

    func record(named name: AccountName, _ connection: PostgresConnection, forUpdate: Bool = false) async throws -> AccountRecord? {
        try await records(
            "SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE name = \(name.rawValue)\(unescaped: forUpdate ? " FOR UPDATE" : "")",
            connection
        ).first
    }

    func record(id: Int64, _ connection: PostgresConnection, forUpdate: Bool = false) async throws -> AccountRecord? {
        try await records(
            "SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE id = \(id)\(unescaped: forUpdate ? " FOR UPDATE" : "")", connection
        )
        .first
    }

    private func matching(_ info: ChappieAccountInfo, _ connection: PostgresConnection) async throws -> AccountRecord? {
        if let accountID = info.accountID, let userID = info.userID {
            return try await records(
                "SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE chatgpt_account_id = \(accountID) AND chatgpt_user_id = \(userID)",
                connection
            ).first
        }
        if let email = info.email, info.accountID == nil {
            return try await records(
                "SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE email = \(email) AND chatgpt_account_id IS NULL", connection
            ).first
        }
        return nil
    }

    private func freeName(for info: ChappieAccountInfo, _ connection: PostgresConnection) async throws -> String {
        let base = info.email.flatMap { AccountName.derived(from: String($0.prefix { $0 != "@" })) }?.rawValue ?? "account"
        var candidate = base
        var suffix = 2
        while try await record(named: AccountName(candidate), connection) != nil {
            candidate = String(base.prefix(60)) + "-\(suffix)"
            suffix += 1
        }
        return candidate
    }

    /// Appends an audit entry in the transaction of the change it records, naming this machine.
    func audit(_ kind: AuditEventKind, account: AccountRecord?, detail: String, _ connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO events (at, kind, account_id, account_name, machine, detail)
            VALUES (\(Date()), \(kind.rawValue), \(account?.id), \(account?.name), \(machine), \(detail))
            """, logger: Self.logger)
    }
}

extension Optional {
    /// `flatMap` with an asynchronous transform.
    fileprivate func asyncFlatMap<U>(_ transform: (Wrapped) async throws -> U?) async rethrows -> U? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}

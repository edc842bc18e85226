package import ChappieStore
import ChappieVault
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// The team pool's PostgreSQL database, connected and migrated but not yet unlocked.
///
/// Queries go through PostgresNIO's connection pool; each refresh lock has a connection of its own,
/// so that waiting for locks can never take the connections the lock holders need to commit, and a
/// lock ends with its connection (the server releases it when a holder dies). Every operation has a deadline: a database that does not answer is ``StoreError/Code/unavailable``
/// ("try again later", exit 75), never a hang.
package final class PoolDatabase: Sendable {
    /// Where the database is (printable: no password).
    package let address: PoolAddress
    /// The name this machine has in the pool (usage history, audit log, Codex homes).
    package let machine: String
    /// How the key was set up in the pool, read when the database was opened.
    package let keySetup: StoreDatabase.KeySetup

    let client: PostgresClient
    private let runner: Task<Void, Never>
    /// How long an operation may wait for the database before it is "unavailable".
    let deadline: Duration

    /// PostgresNIO's own log, which is silent: at debug it would write queries and their bound
    /// values, whatever level chappie's handler is set to. What goes wrong reaches the caller as a
    /// ``StoreError`` instead.
    static let logger = Logger(label: "chappie.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The lock migrations take (one machine migrates; the others wait and find it done).
    private static let migrationLock: Int64 = 0x6368_6170_7069_6501

    private init(
        address: PoolAddress, machine: String, client: PostgresClient, runner: Task<Void, Never>,
        deadline: Duration, keySetup: StoreDatabase.KeySetup
    ) {
        self.address = address
        self.machine = machine
        self.client = client
        self.runner = runner
        self.deadline = deadline
        self.keySetup = keySetup
    }

    deinit {
        runner.cancel()
    }

    /// Connects, checks the server, and applies the migrations of `migrations/postgres/` that are
    /// missing (each in its own transaction, under an advisory lock).
    ///
    /// - Parameters:
    ///   - address: The database.
    ///   - machine: This machine's name in the pool.
    ///   - deadline: How long any one operation may wait. Default: 20 s.
    /// - Throws: ``StoreError``: `.poolAddress` for an unusable address, `.unavailable` when the
    ///   server cannot be reached, `.newerSchema` for a pool a newer chappie migrated, `.database`
    ///   for what the server refuses (a role without rights, say).
    package static func connect(address: PoolAddress, machine: String, deadline: Duration = .seconds(20)) async throws(StoreError) -> PoolDatabase {
        // One connection of its own first: it reports why a pool cannot be used (no such database,
        // a refused login, TLS) at once, where the connection pool would only keep trying.
        let setup: StoreDatabase.KeySetup
        do {
            let connection = try await openDirect(address, deadline: deadline, what: "connecting to the pool \(address)")
            defer { Task { try? await connection.close() } }
            setup = try await within(deadline, what: "migrating the pool \(address)") {
                try await migrate(connection, address: address)
                return try await readKeySetup(connection)
            }
        } catch {
            throw Self.storeError(error, address: address, doing: "opening the pool")
        }
        var configuration = try address.clientConfiguration()
        configuration.options.maximumConnections = 8
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let runner = Task { await client.run() }
        return PoolDatabase(
            address: address, machine: machine, client: client, runner: runner, deadline: deadline, keySetup: setup)
    }

    /// What `chappie doctor` reports of a pool: reached, its server's version, and how many of this
    /// chappie's migrations it has. Changes nothing (no migration is applied).
    package struct Inspection: Sendable {
        /// The server's version.
        package var serverVersion: String
        /// The migrations applied, by id.
        package var applied: [String]
        /// The migrations this chappie has.
        package var known: [String] { StoreSchema.postgresMigrations.map(\.id) }
        /// The first applied migration this chappie does not know (the pool is a newer chappie's).
        package var newer: String? { Self.newer(in: applied) }

        static func newer(in applied: [String]) -> String? {
            let known = StoreSchema.postgresMigrations.map(\.id)
            return applied.first { !known.contains($0) }
        }
    }

    /// One connection of its own, opened within the deadline (the caller closes it).
    private static func openDirect(_ address: PoolAddress, deadline: Duration, what: String) async throws -> PostgresConnection {
        let configuration = try address.connectionConfiguration()
        return try await within(deadline, what: what) {
            try await PostgresConnection.connect(configuration: configuration, id: Int.random(in: 1...Int(Int32.max)), logger: logger)
        }
    }

    /// The migrations applied to the pool; `nil` for a database no chappie has migrated.
    private static func appliedMigrations(_ connection: PostgresConnection) async throws -> [String]? {
        var exists = false
        for try await (found) in try await connection.query("SELECT to_regclass('chappie_migrations') IS NOT NULL", logger: logger).decode(Bool.self)
        {
            exists = found
        }
        guard exists else { return nil }
        var ids: [String] = []
        for try await (id) in try await connection.query("SELECT id FROM chappie_migrations ORDER BY id", logger: logger).decode(String.self) {
            ids.append(id)
        }
        return ids
    }

    /// Connects once and reads the server's version and the applied migrations.
    ///
    /// - Throws: ``StoreError``, as ``connect(address:machine:deadline:)``.
    package static func inspect(_ address: PoolAddress, deadline: Duration = .seconds(10)) async throws(StoreError) -> Inspection {
        do {
            let connection = try await openDirect(address, deadline: deadline, what: "connecting to the pool \(address)")
            defer { Task { try? await connection.close() } }
            return try await within(deadline, what: "reading the pool \(address)") {
                var inspection = Inspection(serverVersion: "?", applied: [])
                for try await (text) in try await connection.query("SELECT current_setting('server_version')", logger: logger).decode(String.self) {
                    inspection.serverVersion = text
                }
                inspection.applied = try await appliedMigrations(connection) ?? []
                return inspection
            }
        } catch {
            throw storeError(error, address: address, doing: "inspecting the pool")
        }
    }

    /// Applies the missing migrations in one transaction, under an advisory lock (another machine
    /// starting at once waits, then finds them applied), refusing a pool migrated by a newer chappie.
    private static func migrate(_ connection: PostgresConnection, address: PoolAddress) async throws {
        let known = StoreSchema.postgresMigrations.map(\.id)
        func refuseNewer(_ applied: [String]) throws {
            if let newer = Inspection.newer(in: applied) {
                throw StoreError(
                    .newerSchema,
                    "the pool \(address) was migrated by a newer chappie (migration \(newer)); this one (\(known.count) migrations) leaves it untouched. Upgrade chappie on this machine."
                )
            }
        }
        // Nearly always everything is applied: found without a lock, so opens do not queue.
        if let done = try await appliedMigrations(connection) {
            try refuseNewer(done)
            if Set(known).isSubset(of: done) { return }
        }
        try await transaction(connection) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS chappie_migrations (id TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())", logger: logger)
            // Another machine may have migrated while this one waited for the lock.
            let done = try await appliedMigrations(connection) ?? []
            try refuseNewer(done)
            for migration in StoreSchema.postgresMigrations where !done.contains(migration.id) {
                for statement in statements(of: migration.sql) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO chappie_migrations (id) VALUES (\(migration.id))", logger: logger)
            }
        }
    }

    /// A migration's statements, one at a time (the extended protocol runs one per query): each
    /// ends with a semicolon at the end of a line; lines of `--` comments are left out.
    static func statements(of sql: String) -> [String] {
        var statements: [String] = []
        var current: [Substring] = []
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("--") { continue }
            current.append(line)
            if trimmed.hasSuffix(";") {
                statements.append(current.joined(separator: "\n"))
                current = []
            }
        }
        if !current.isEmpty { statements.append(current.joined(separator: "\n")) }
        return statements
    }

    private static func readKeySetup(_ connection: PostgresConnection) async throws -> StoreDatabase.KeySetup {
        guard let keyID = try await setting(.keyID, connection).map({ String(decoding: $0, as: UTF8.self) }) else { return .none }
        if let kdf = try await setting(.passphraseKDF, connection), let parameters = try? JSONDecoder().decode(PassphraseKDF.self, from: kdf) {
            return .passphrase(parameters, keyID: keyID)
        }
        return .key(id: keyID)
    }

    // MARK: Running queries

    /// Runs `body` on a connection of the query pool, within the deadline.
    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws(StoreError) -> T {
        do {
            let client = self.client
            return try await Self.within(deadline, what: "reading the pool") { try await client.withConnection { try await body($0) } }
        } catch {
            throw Self.storeError(error, address: address, doing: "reading the pool")
        }
    }

    /// Runs `body` in one transaction on a connection of the query pool, within the deadline: all
    /// of it is committed, or (on any error) none.
    func write<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws(StoreError) -> T {
        do {
            let client = self.client
            return try await Self.within(deadline, what: "writing the pool") {
                try await client.withConnection { connection in try await Self.transaction(connection, body) }
            }
        } catch {
            throw Self.storeError(error, address: address, doing: "writing the pool", nothingChanged: true)
        }
    }

    /// `BEGIN`, `body`, `COMMIT`; `ROLLBACK` when `body` throws.
    static func transaction<T>(_ connection: PostgresConnection, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await connection.query("BEGIN", logger: logger)
        do {
            let value = try await body(connection)
            try await connection.query("COMMIT", logger: logger)
            return value
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// Runs `operation`, or throws ``StoreError/Code/unavailable`` once `limit` has passed. An
    /// operation that overruns is cancelled and left to end by itself (PostgresNIO does not give up
    /// every wait on cancellation, and a task group would wait for it): a write that overran may
    /// still commit when the server answers, which the message says.
    static func within<T: Sendable>(_ limit: Duration, what: String, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let outcome = ResumedOnce<T>()
        return try await withCheckedThrowingContinuation { continuation in
            outcome.waiting.withLock { $0 = continuation }
            let timer = Task {
                try? await Task.sleep(for: limit)
                guard let waiting = outcome.waiting.withLock({ $0.take() }) else { return }
                outcome.work.withLock { $0?.cancel() }
                waiting.resume(
                    throwing: StoreError(
                        .unavailable,
                        "\(what) took longer than \(limit.components.seconds) s; the database may be down or overloaded (a change may still be applied when it answers); try again later"
                    ))
            }
            let work = Task {
                let result: Result<T, any Error>
                do {
                    result = .success(try await operation())
                } catch {
                    result = .failure(error)
                }
                // Answered in time: the timer has nothing left to do.
                if let waiting = outcome.waiting.withLock({ $0.take() }) {
                    timer.cancel()
                    waiting.resume(with: result)
                }
            }
            outcome.work.withLock { $0 = work }
        }
    }

    // MARK: Refresh locks

    /// The first key of the advisory locks that serialise refreshes (the second is the account id).
    static let refreshLockClass: Int32 = 0x6368_6170

    /// Runs `body` holding the pool's refresh locks of these accounts (taken in the order given):
    /// advisory transaction locks on a connection of its own, opened for them and closed after, so
    /// that a holder that dies (or loses the network) releases them. Waiting for a lock another
    /// machine holds ends after `lockTimeout` as ``StoreError/Code/unavailable``.
    nonisolated(nonsending) func holdingRefreshLocks<T>(
        _ ids: [Int64], lockTimeout: Duration = .seconds(60), _ body: () async throws -> T
    ) async throws -> T {
        let connection: PostgresConnection
        do {
            connection = try await Self.openDirect(address, deadline: deadline, what: "connecting to the pool for a refresh lock")
        } catch {
            throw Self.storeError(error, address: address, doing: "taking a refresh lock")
        }
        defer { Task { try? await connection.close() } }
        // Every step has a deadline: a connection the server dropped mid-restart must not hang the caller.
        let deadline = self.deadline
        do {
            try await Self.within(deadline, what: "taking a refresh lock") {
                try await connection.query("BEGIN", logger: Self.logger)
                try await connection.query("SET LOCAL lock_timeout = \(unescaped: "'\(lockTimeout.components.seconds)s'")", logger: Self.logger)
                // The lock lives as long as this transaction: a server-wide idle timeout shorter than a
                // refresh's wait for the issuer would end it mid-refresh and let another machine redeem.
                try await connection.query("SET LOCAL idle_in_transaction_session_timeout = 0", logger: Self.logger)
            }
            try await Self.within(lockTimeout + deadline, what: "waiting for a refresh lock") {
                for id in ids {
                    try await connection.query(
                        "SELECT pg_advisory_xact_lock(\(Self.refreshLockClass), \(Int32(truncatingIfNeeded: id)))", logger: Self.logger)
                }
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55P03" {
            throw StoreError(
                .unavailable,
                "another machine has held this account's refresh lock for over \(lockTimeout.components.seconds) s; try again later (nothing was redeemed)"
            )
        } catch {
            throw Self.storeError(error, address: address, doing: "taking a refresh lock")
        }
        let value = try await body()
        // Ending the transaction releases the locks; a failure here (the server gone) releases them too.
        _ = try? await Self.within(deadline, what: "releasing a refresh lock") { try await connection.query("COMMIT", logger: Self.logger) }
        return value
    }

    // MARK: Settings

    /// A pool-wide setting's value, if set.
    static func setting(_ key: SettingKey, _ connection: PostgresConnection) async throws -> Data? {
        let rows = try await connection.query("SELECT value FROM settings WHERE key = \(key.rawValue)", logger: logger)
        for try await (value) in rows.decode(Data.self) { return value }
        return nil
    }

    /// Sets a pool-wide setting, or with `nil` removes it.
    static func setSetting(_ key: SettingKey, _ value: Data?, _ connection: PostgresConnection) async throws {
        if let value {
            try await connection.query(
                "INSERT INTO settings (key, value) VALUES (\(key.rawValue), \(value)) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                logger: logger)
        } else {
            try await connection.query("DELETE FROM settings WHERE key = \(key.rawValue)", logger: logger)
        }
    }

    /// One machine's setting's value, if set.
    static func machineSetting(_ key: SettingKey, machine: String, _ connection: PostgresConnection) async throws -> Data? {
        let rows = try await connection.query(
            "SELECT value FROM machine_settings WHERE machine = \(machine) AND key = \(key.rawValue)", logger: logger)
        for try await (value) in rows.decode(Data.self) { return value }
        return nil
    }

    /// Sets one machine's setting, or with `nil` removes it.
    static func setMachineSetting(_ key: SettingKey, machine: String, _ value: Data?, _ connection: PostgresConnection) async throws {
        if let value {
            try await connection.query(
                """
                INSERT INTO machine_settings (machine, key, value) VALUES (\(machine), \(key.rawValue), \(value))
                ON CONFLICT (machine, key) DO UPDATE SET value = excluded.value
                """, logger: logger)
        } else {
            try await connection.query("DELETE FROM machine_settings WHERE machine = \(machine) AND key = \(key.rawValue)", logger: logger)
        }
    }

    // MARK: Errors

    /// A store error for any failure of PostgresNIO (or a ``StoreError`` as it is): the server's
    /// message and SQL state, never the query's values or the password.
    static func storeError(_ error: any Error, address: PoolAddress, doing what: String, nothingChanged: Bool = false) -> StoreError {
        if let error = error as? StoreError { return error }
        let tail = nothingChanged ? "; nothing was changed" : ""
        if error is CancellationError { return StoreError(.database, "\(what) was cancelled\(tail)") }
        // Some of PostgresNIO's paths report its older error type.
        if let error = error as? PostgresError {
            switch error {
            case .server(let response):
                return serverError(
                    state: response.fields[.sqlState] ?? "?", message: response.fields[.message], address: address, doing: what, tail: tail)
            case .connectionClosed:
                return StoreError(.unavailable, "\(what) failed: the connection to the pool \(address) was closed; try again later\(tail)")
            case .protocol:
                return StoreError(.database, "\(what) failed (a protocol error)\(tail)")
            }
        }
        guard let error = error as? PSQLError else { return StoreError(.database, "\(what) failed (\(type(of: error)))\(tail)") }
        if let state = error.serverInfo?[.sqlState] {
            return serverError(state: state, message: error.serverInfo?[.message], address: address, doing: what, tail: tail)
        }
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
            // The socket's own reason (refused, no route, a timeout) says which: it holds no secret.
            let reason = error.underlying.map { " (\(String(describing: $0).prefix(200)))" } ?? ""
            return StoreError(.unavailable, "\(what) failed: the pool \(address) cannot be reached now\(reason); try again later\(tail)")
        case .sslUnsupported:
            return StoreError(.poolAddress, "the pool \(address) does not offer TLS, and the address requires it (sslmode)")
        case .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
            return StoreError(.poolAddress, "the TLS connection to the pool \(address) failed; check sslmode and sslrootcert")
        case .authMechanismRequiresPassword, .unsupportedAuthMechanism, .saslError:
            return StoreError(
                .poolAddress, "the pool \(address) wants a password chappie does not have or cannot use (\(error.code)); see docs/team-pool.md")
        default:
            return StoreError(.database, "\(what) failed (\(error.code))\(tail)")
        }
    }

    /// A store error for what the server answered: its message and SQL state (never the query's
    /// values: a message does not carry them; the detail, which can, is not used).
    private static func serverError(state: String, message: String?, address: PoolAddress, doing what: String, tail: String) -> StoreError {
        let message = message ?? "no message"
        switch state {
        case "55P03", "57014", "40001", "40P01", "53300", "57P01", "57P02", "57P03", "08000", "08003", "08006":
            // Lock timeout, statement cancelled, serialisation failure, deadlock, too many
            // connections, the server shutting down or starting: all pass.
            return StoreError(.unavailable, "\(what) failed for now (\(message), SQLSTATE \(state)); try again later\(tail)")
        case "28000", "28P01":
            return StoreError(.poolAddress, "the pool \(address) refused the login (\(message)); check the user and password")
        case "3D000":
            return StoreError(.poolAddress, "the pool \(address) has no such database (\(message)); create it first (docs/team-pool.md)")
        case "42501":
            return StoreError(.database, "the pool's role may not do this (\(message)); grant it the rights docs/team-pool.md lists\(tail)")
        default:
            return StoreError(.database, "\(what) failed (\(message), SQLSTATE \(state))\(tail)")
        }
    }
}

/// A continuation resumed by whichever comes first, the answer or the deadline, and the work to
/// cancel when the deadline wins.
private final class ResumedOnce<T: Sendable>: Sendable {
    let waiting = Mutex<CheckedContinuation<T, any Error>?>(nil)
    let work = Mutex<Task<Void, Never>?>(nil)
}

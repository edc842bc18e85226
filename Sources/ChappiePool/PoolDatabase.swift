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
    static let migrationLock: Int64 = 0x6368_6170_7069_6501

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
    package static func connect(
        address: PoolAddress, machine: String, deadline: Duration = .seconds(20), statementTimeout: Duration? = nil
    ) async throws(StoreError) -> PoolDatabase {
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
        var configuration = try address.clientConfiguration(statementTimeout: statementTimeout ?? Self.statementTimeout(for: deadline))
        configuration.options.maximumConnections = 8
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let runner = Task { await client.run() }
        return PoolDatabase(
            address: address, machine: machine, client: client, runner: runner, deadline: deadline, keySetup: setup)
    }

    /// One connection of its own, opened within the deadline (the caller closes it).
    static func openDirect(_ address: PoolAddress, deadline: Duration, what: String) async throws -> PostgresConnection {
        let configuration = try address.connectionConfiguration()
        return try await within(deadline, what: what) {
            try await PostgresConnection.connect(configuration: configuration, id: Int.random(in: 1...Int(Int32.max)), logger: logger)
        }
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
                try await client.withTransaction(logger: Self.logger) { connection in try await body(connection) }
            }
        } catch {
            throw Self.storeError(error, address: address, doing: "writing the pool", nothingChanged: true)
        }
    }

    /// How long one statement may run on the server (`statement_timeout`): three quarters of the
    /// deadline, so that the server cancels a slow statement, rolling its transaction back, before
    /// this side gives up; only a server that stopped answering at all is abandoned at the deadline.
    static func statementTimeout(for deadline: Duration) -> Duration { deadline * 3 / 4 }

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
}

/// A continuation resumed by whichever comes first, the answer or the deadline, and the work to
/// cancel when the deadline wins.
private final class ResumedOnce<T: Sendable>: Sendable {
    let waiting = Mutex<CheckedContinuation<T, any Error>?>(nil)
    let work = Mutex<Task<Void, Never>?>(nil)
}

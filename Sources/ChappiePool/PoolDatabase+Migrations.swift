package import ChappieStore
import ChappieStoreFormat
import Foundation
import PostgresNIO

/// The pool's schema: the migrations of `migrations/postgres/`, applied once by whichever machine
/// opens the pool first, and what `chappie doctor` reports of them.
extension PoolDatabase {
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

    /// The migrations applied to the pool; `nil` for a database no chappie has migrated.
    static func appliedMigrations(_ connection: PostgresConnection) async throws -> [String]? {
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
    static func migrate(_ connection: PostgresConnection, address: PoolAddress) async throws {
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
        try await connection.withTransaction(logger: logger) { connection in
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
}

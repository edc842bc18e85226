import ChappieStore
import Foundation
import PostgresNIO

extension PoolDatabase {
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
                // Not withTransaction: the transaction outlives this step (it holds the locks while
                // `body` runs elsewhere), and `body`'s own errors must reach the caller unwrapped.
                try await connection.query("BEGIN", logger: Self.logger)
                try await connection.query("SET LOCAL lock_timeout = \(unescaped: "'\(lockTimeout.components.seconds)s'")", logger: Self.logger)
                // The lock lives as long as this transaction: a server-wide idle timeout shorter than a
                // refresh's wait for the issuer would end it mid-refresh and let another machine redeem.
                try await connection.query("SET LOCAL idle_in_transaction_session_timeout = 0", logger: Self.logger)
                // The wait for the lock is bounded by lock_timeout, not by a statement timeout.
                try await connection.query("SET LOCAL statement_timeout = 0", logger: Self.logger)
            }
            try await Self.within(lockTimeout + deadline, what: "waiting for a refresh lock") {
                for id in ids {
                    try await connection.query(
                        "SELECT pg_advisory_xact_lock(\(Self.refreshLockClass), \(Int32(truncatingIfNeeded: id)))", logger: Self.logger)
                }
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState].map(PostgresError.Code.init(raw:)) == .lockNotAvailable {
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
}

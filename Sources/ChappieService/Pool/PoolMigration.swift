public import ChappieCore
import ChappieStore
import ChappiePool
import Foundation

/// `chappie pool migrate --from-sqlite`: moves the accounts of a single-user (SQLite) store into the
/// team pool, keeping each one's identity, settings and usage history.
///
/// Each account is moved holding its refresh lock in the local store, so no refresh happens in
/// between: its tokens are read, stored in the pool (sealed with the pool's key) in one transaction,
/// and only then removed from the local store. Afterwards the account exists once, in the pool;
/// two copies of one rotating refresh token would get it revoked. An account the pool has from an
/// earlier run (the same identity; that run's answer may have been lost) counts as moved, with the
/// newer tokens kept. An account is marked as moving in the local store before the pool is written
/// (``SQLiteAccountStore/markMoving(_:)``): a move killed half-way leaves it unusable here until
/// the move is run again, never usable in both stores. One the pool has from another sign-in of the same ChatGPT account and user, or
/// whose name another pool account has, is left in the local store and reported.
public enum PoolMigration {
    /// What was moved and what was left.
    public struct Outcome: Sendable {
        /// The accounts now in the pool (and no longer in the local store).
        public var moved: [AccountName] = []
        /// The accounts left in the local store, with why.
        public var left: [Left] = []
    }

    /// An account left in the local store.
    public struct Left: Sendable {
        /// Its name.
        public var name: AccountName
        /// Why it was left.
        public var reason: String
    }

    /// Moves every account of the SQLite store in `home` (default: the data directory of `options`)
    /// into the pool `options` select.
    ///
    /// - Parameter progress: Told of each account as it is moved or left.
    /// - Throws: ``ServiceError`` `.configuration` when the options select no pool; the stores' errors.
    public static func fromSQLite(home: String?, options: ServiceOptions, progress: @Sendable (String) -> Void) async throws -> Outcome {
        let poolOptions = options.storeOptions
        guard try poolOptions.poolAddress() != nil else {
            throw ServiceError(
                .configuration, "no team pool is selected: give --store postgres://… or set CHAPPIE_STORE_URL (team-pool.md in share/doc/chappie)")
        }
        guard let pool = try await StoreOpener.open(poolOptions).store as? PostgresAccountStore else {
            throw ServiceError(.configuration, "the selected store is not a team pool")
        }
        var localOptions = poolOptions
        localOptions.home = home ?? options.home
        localOptions.storeURL = ""
        guard FileManager.default.fileExists(atPath: StoreDatabase.fileURL(in: localOptions.location).path) else {
            throw ServiceError(.invalidInput, "there is no local store in \(localOptions.location.directory.path)")
        }
        guard let local = try await StoreOpener.open(localOptions).store as? SQLiteAccountStore else {
            throw ServiceError(.configuration, "the local store is not a SQLite store")
        }
        let origin = "the local store of \(pool.machine) (\(local.location.directory.path))"
        var outcome = Outcome()
        // Accounts an earlier run marked: if the pool has them, its copy is the one to keep.
        let marked = try await local.movingAccountIDs()
        for account in try await local.accounts() {
            let moved: Result<Void, PostgresAccountStore.ImportRefusal> = try await local.withRefreshLock(on: account) {
                let current = try await local.account(id: account.id)
                // Marked (and committed) before the pool has it: from here on no command uses the
                // local copy, so a move killed at any moment never leaves two usable copies.
                try await local.markMoving(current)
                let credentials = try await local.credentialsToMove(current)
                let usage = try await local.usageSamples(for: current, since: nil, until: nil)
                do {
                    _ = try await pool.importAccount(
                        current, credentials: credentials, usage: usage, from: origin, keepingPoolCopy: marked.contains(current.id))
                } catch let refusal as PostgresAccountStore.ImportRefusal {
                    // The pool did not take it: it stays here, usable.
                    try await local.unmarkMoving(current)
                    return .failure(refusal)
                }
                // In the pool now: the local copy goes, so that its refresh token is never redeemed twice.
                do {
                    try await local.remove(current.name, note: "moved to the team pool")
                } catch {
                    throw ServiceError(
                        .configuration,
                        "account \(current.name) is in the pool now, but could not be removed from the local store (\(FailureDescription(error)?.message ?? "\(error)")); remove it there before using that store again: chappie --store '' accounts remove \(current.name) --yes"
                    )
                }
                return .success(())
            }
            switch moved {
            case .success:
                outcome.moved.append(account.name)
                progress("\(account.name): moved to the pool")
            case .failure(let refusal):
                let reason =
                    switch refusal {
                    case .alreadyInPool: "the pool has this ChatGPT account already, from another sign-in; it stays in the local store"
                    case .nameTaken:
                        "another account in the pool is named \(account.name); rename one of them (chappie accounts rename) and run this again"
                    }
                outcome.left.append(Left(name: account.name, reason: reason))
                progress("\(account.name): left: \(reason)")
            }
        }
        return outcome
    }
}

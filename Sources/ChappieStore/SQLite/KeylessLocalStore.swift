public import ChappieCore
import ChappieStoreFormat
import Foundation
import GRDB

/// This machine's store read, or one account removed from it, without its key and without
/// waiting: for the SDK session's synchronous API (docs/sdk.md), which must answer on the main
/// actor in milliseconds, where opening the store may derive a passphrase's key (Argon2id) or wait
/// for another process's lock.
///
/// The removal is the one write chappie makes without checking the key first (docs/security.md):
/// deleting a row needs no key, and a sign-out that waited for one would leave the credential on
/// disk when the program exits at once.
///
/// Only where the answer is surely this machine's store as it is: no team pool (named or in a
/// `store-url` file), a data directory and database of this user's alone, not a link, at the
/// schema this chappie migrates to. Anything else is `nil`, and the caller opens the store.
public enum KeylessLocalStore {
    /// What the store says of an account slot.
    public enum Slot: Sendable, Equatable {
        /// The account as stored.
        case account(Account)
        /// No account has that name.
        case empty
    }

    /// The slot `name` as the store has it; `nil` when this cannot be said at once.
    public static func slot(_ name: AccountName, options: StoreOptions) -> Slot? {
        guard let file = databaseFile(options), let database = open(file, readOnly: true) else { return nil }
        return try? database.read { db -> Slot? in
            guard try isCurrent(db) else { return nil }
            guard let record = try AccountRecord.filter(AccountRecord.Columns.name == name.rawValue).fetchOne(db) else { return .empty }
            return .account(try record.account(activeID: try SQLiteAccountStore.activeID(db)))
        }
    }

    /// Removes the account `name` (its credentials, usage and leases with it) and logs the removal,
    /// in one transaction; `true` when the slot is empty now, `false` when this could not be done
    /// at once (the caller removes it through the opened store).
    public static func remove(_ name: AccountName, options: StoreOptions) -> Bool {
        let location = options.location
        guard let file = databaseFile(options), let database = open(file, readOnly: false) else { return false }
        var removed: Int64?
        var done = false
        do {
            try database.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    guard try isCurrent(db) else { return .rollback }
                    if try AccountRecord.filter(AccountRecord.Columns.name == name.rawValue).fetchCount(db) > 0 {
                        removed = try SQLiteAccountStore.deleteAccount(named: name, note: "signed out", db)
                    }
                    done = true
                    return .commit
                }
            }
        } catch {
            return false
        }
        if let removed { RecoveryFile.remove(at: SQLiteAccountStore.recoveryURL(for: removed, in: location)) }
        return done
    }

    /// The database of a local store whose directory and file are this user's alone; `nil` otherwise.
    static func databaseFile(_ options: StoreOptions) -> URL? {
        // A pool named by the options or the environment, or an address that cannot be read: not this.
        do {
            guard try options.poolAddress() == nil else { return nil }
        } catch {
            return nil
        }
        let location = options.location
        guard !FileManager.default.fileExists(atPath: location.directory.appendingPathComponent(StoreOptions.storeURLFileName).path) else {
            return nil
        }
        let file = location.directory.appendingPathComponent(StoreDatabase.fileName)
        var directory = stat(), database = stat()
        guard lstat(location.directory.path, &directory) == 0, directory.st_mode & S_IFMT == S_IFDIR, directory.st_uid == geteuid(),
            directory.st_mode & 0o077 == 0, lstat(file.path, &database) == 0, database.st_mode & S_IFMT == S_IFREG,
            database.st_uid == geteuid(), database.st_mode & 0o077 == 0
        else { return nil }
        return file
    }

    /// The database opened without waiting: busy is no answer.
    private static func open(_ file: URL, readOnly: Bool) -> DatabaseQueue? {
        var configuration = Configuration()
        configuration.readonly = readOnly
        configuration.busyMode = .immediateError
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            if !readOnly { try db.execute(sql: "PRAGMA secure_delete = ON") }
        }
        return try? DatabaseQueue(path: file.path, configuration: configuration)
    }

    /// Whether the database is at the schema this chappie migrates to.
    private static func isCurrent(_ db: Database) throws -> Bool {
        try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier") == StoreMigration.sqlite.map(\.id)
    }
}

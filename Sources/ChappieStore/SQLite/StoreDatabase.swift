import ChappieStoreFormat
import ChappieCore
public import ChappieVault
public import Foundation
import GRDB

/// The store's database, opened and migrated but not yet unlocked: it knows how its key was set up,
/// but cannot read or write credentials until ``unlock(with:)`` proves a key.
///
/// ```swift
/// let database = try StoreDatabase.open(at: location)
/// let store = try database.unlock(with: key)
/// ```
public final class StoreDatabase: Sendable {
    /// How the store's key was set up.
    public enum KeySetup: Sendable, Equatable {
        /// A new store: the first unlock sets the key.
        case none
        /// A key file or credential holds the key with this id.
        case key(id: String)
        /// A passphrase, stretched with these parameters, gives the key with this id.
        case passphrase(PassphraseKDF, keyID: String)
    }

    /// The database file's name in the data directory.
    public static let fileName = "chappie.sqlite"

    let pool: DatabasePool
    /// Where the store lives.
    public let location: StoreLocation
    /// How the key was set up, read when the database was opened.
    public let keySetup: KeySetup

    private init(pool: DatabasePool, location: StoreLocation, keySetup: KeySetup) {
        self.pool = pool
        self.location = location
        self.keySetup = keySetup
    }

    /// Whether the file system holding `directory` has no block left for this user.
    static func diskIsFull(_ directory: URL) -> Bool {
        var info = statvfs()
        return statvfs(directory.path, &info) == 0 && info.f_bavail == 0
    }

    /// The database file.
    public static func fileURL(in location: StoreLocation) -> URL {
        location.directory.appendingPathComponent(fileName)
    }

    /// Opens (creating if needed) the database: directory 0700, file 0600, WAL, a busy timeout,
    /// foreign keys, and the migrations of `migrations/` applied in order.
    ///
    /// - Parameters:
    ///   - location: The data directory.
    ///   - busyTimeout: How long a write waits for another process's write lock. Default: 10 s.
    ///
    /// - Throws: ``StoreError`` `.corrupt` for a file that is not a chappie database, `.newerSchema`
    ///   for one written by a newer chappie (left untouched), `.io` when files cannot be made private.
    public static func open(at location: StoreLocation, busyTimeout: TimeInterval = 10) throws(StoreError) -> StoreDatabase {
        let file = fileURL(in: location)
        try FilePermissions.refuseForeignDirectory(location.directory)
        try FilePermissions.ensurePrivateDirectory(location.directory)
        for suffix in ["-wal", "-shm", "-journal"] { try FilePermissions.refuseLink(URL(fileURLWithPath: file.path + suffix)) }
        try FilePermissions.ensurePrivateFile(file)
        // A read-only database would be found out only at the first write, after a refresh token
        // was redeemed: refuse it before anything happens.
        guard access(file.path, W_OK) == 0 else {
            throw StoreError(.io, "\(file.path) is read-only; chappie must be able to write it (chmod 600 \(file.path)); nothing was changed")
        }
        // SQLite gives its shared-memory and WAL files the database's mode when it makes them: a
        // database that was read-only once leaves them read-only for good. They are chappie's own.
        for suffix in ["-wal", "-shm"] {
            let companion = file.path + suffix
            if FileManager.default.fileExists(atPath: companion), access(companion, W_OK) != 0 { chmod(companion, 0o600) }
        }

        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.foreignKeysEnabled = true
        configuration.label = "chappie"
        configuration.prepareDatabase { db in
            // Deleted content (old sealed blobs, removed accounts) is overwritten, not left in free pages.
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: file.path, configuration: configuration)
        } catch {
            // A full disk makes SQLite fail with an I/O error at open: say what it is, as a
            // temporary failure, rather than call a healthy database damaged.
            if Self.diskIsFull(location.directory) {
                throw StoreError(
                    .unavailable, "the disk holding \(location.directory.path) is full; free some space and try again (nothing was changed)")
            }
            throw StoreError(.corrupt, "\(file.path) cannot be opened as a chappie database (\(Self.reason(error)))")
        }
        var migrator = DatabaseMigrator()
        for migration in StoreSchema.migrations {
            migrator.registerMigration(migration.id) { db in try db.execute(sql: migration.sql) }
        }
        do {
            if try pool.read({ db in try migrator.hasBeenSuperseded(db) }) {
                throw StoreError(
                    .newerSchema,
                    "\(file.path) was written by a newer chappie; this one (\(StoreSchema.migrations.count) migrations) leaves it untouched. Upgrade chappie."
                )
            }
            // Migrating takes the write lock: only when something is missing.
            if try !pool.read({ db in try migrator.hasCompletedMigrations(db) }) {
                try migrator.migrate(pool)
            }
            let setup = try pool.read { db in try Self.readKeySetup(db) }
            return StoreDatabase(pool: pool, location: location, keySetup: setup)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.corrupt, "\(file.path) is not a usable chappie database (\(Self.reason(error)))")
        }
    }

    /// How the key is set up now (another process may have rotated it since the open).
    func currentKeySetup() -> KeySetup {
        (try? pool.read { db in try Self.readKeySetup(db) }) ?? keySetup
    }

    private static func readKeySetup(_ db: Database) throws -> KeySetup {
        guard let keyID = try db.setting(.keyID).map({ String(decoding: $0, as: UTF8.self) }) else { return .none }
        if let kdf = try db.setting(.passphraseKDF), let parameters = try? JSONDecoder().decode(PassphraseKDF.self, from: kdf) {
            return .passphrase(parameters, keyID: keyID)
        }
        return .key(id: keyID)
    }

    /// Proves a key against the store's key check (or, for a new store, makes it the store's key).
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - passphraseKDF: For a passphrase-derived key, the parameters to record.
    ///   - keySource: Reads the key again after another process rotated it (a key file); `nil` when
    ///     it cannot be read again (a passphrase).
    /// - Throws: ``StoreError`` `.wrongKey` (nothing written) when the key check does not open.
    public func unlock(
        with key: SecretKey, passphraseKDF: PassphraseKDF? = nil, keySource: (@Sendable () throws -> SecretKey)? = nil
    ) throws(StoreError) -> SQLiteAccountStore {
        var rowBound = false
        do {
            // Prove the key with a read first: a wrong key must not even start a write. The same read
            // tells whether migration 0004 left credentials bound to row ids not yet resealed.
            let (check, rowBoundFlag) = try pool.read { db in (try db.setting(.keyCheck), try db.setting(.rowBoundCredentials)) }
            rowBound = rowBoundFlag != nil
            if let stored = check {
                guard KeyCheck.verify(stored, key: key) else {
                    let storedID = try pool.read { db in try db.setting(.keyID) }.map { String(decoding: $0, as: UTF8.self) }
                    throw StoreError(
                        .wrongKey,
                        "the key (id \(key.id)) does not open this store, which was sealed with key \(storedID ?? "?"); nothing was changed")
                }
            } else {
                try pool.write { db in
                    // Another process may have set the key since the read above.
                    if let stored = try db.setting(.keyCheck) {
                        guard KeyCheck.verify(stored, key: key) else {
                            throw StoreError(.wrongKey, "another process set up this store with a different key; nothing was changed")
                        }
                        return
                    }
                    try db.setSetting(.keyCheck, KeyCheck.make(key: key))
                    try db.setSetting(.keyID, Data(key.id.utf8))
                    try db.setSetting(.passphraseKDF, try passphraseKDF.map { try JSONEncoder().encode($0) })
                    try db.record(.keyCreated, account: nil, detail: "key \(key.id)\(passphraseKDF == nil ? "" : " from a passphrase")")
                }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.database, "cannot read the key check (\(Self.reason(error)))")
        }
        return SQLiteAccountStore(database: self, key: key, keySource: keySource, acceptsRowBoundCredentials: rowBound)
    }

    /// A database error's reason, without SQL arguments.
    static func reason(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "SQLite code \(error.resultCode.rawValue)" }
        return "\(error)"
    }
}

/// The sealed known value that proves a key before anything is written.
package enum KeyCheck {
    private static let associatedData = SealingLabels.keyCheck
    private static let plaintext = SealingLabels.keyCheckPlaintext

    package static func make(key: SecretKey) -> Data {
        let box = SealedBox.seal(SecretBytes(utf8: plaintext), key: key, associatedData: associatedData)
        return box.nonce + box.ciphertext
    }

    package static func verify(_ stored: Data, key: SecretKey) -> Bool {
        guard stored.count > SealedBox.nonceByteCount else { return false }
        let box = SealedBox(nonce: stored.prefix(SealedBox.nonceByteCount), ciphertext: stored.dropFirst(SealedBox.nonceByteCount))
        guard let opened = try? box.open(key: key, associatedData: associatedData) else { return false }
        return opened.constantTimeEquals(SecretBytes(utf8: plaintext))
    }
}

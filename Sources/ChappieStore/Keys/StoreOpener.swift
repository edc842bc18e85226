public import ChappieVault
package import Foundation

/// Opens a team pool's store with this machine's key. `ChappiePool` provides the one
/// implementation, so that only programs that use a pool link PostgreSQL's client (and NIO).
public protocol PoolBackend: Sendable {
    /// Opens and unlocks the pool at `address`; `options` give the key's sources and the data directory.
    func open(_ address: PoolAddress, options: StoreOptions) async throws -> StoreOpener.Opened
}

/// Opens the store with the key from the first source that applies (docs/security.md, "Where the key comes from"), creating the
/// default key file for a new store and finishing a key rotation a crash interrupted.
public enum StoreOpener {
    /// An unlocked store and where its key came from.
    public struct Opened: Sendable {
        /// The store.
        package let store: any AccountStore
        package init(store: any AccountStore, local: SQLiteAccountStore?, source: KeySource, setup: StoreDatabase.KeySetup) {
            self.store = store
            self.local = local
            self.source = source
            self.setup = setup
        }
        /// The store when it is this machine's SQLite database (`nil` for a team pool).
        public let local: SQLiteAccountStore?
        /// The key's source.
        public let source: KeySource
        /// How the key was set up in the store.
        public let setup: StoreDatabase.KeySetup
    }

    /// Opens and unlocks the store on a thread of its own: opening is synchronous by nature (it
    /// migrates, may wait for a rotation's key lock, may ask for a passphrase), and none of it may
    /// block the cooperative pool.
    ///
    /// - Throws: ``StoreError`` or ``VaultError``: configuration or key problems (exit code 78); a
    ///   passphrase that is not entered is ``VaultError/Code/passphraseUnavailable``.
    public static func open(_ options: StoreOptions) async throws -> Opened {
        if let address = try options.poolAddress() {
            guard let backend = options.poolBackend else {
                throw StoreError(
                    .poolAddress,
                    "the store is the team pool \(address), and this program was built without the team pool's backend: use the chappie command, or link ChappiePool and set StoreOptions.poolBackend to TeamPool()"
                )
            }
            return try await backend.open(address, options: options)
        }
        return try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try openNow(options) }) }.start()
        }
    }

    /// Opens and unlocks this machine's SQLite store, blocking the calling thread.
    ///
    /// - Throws: ``StoreError`` `.poolAddress` when the options select a team pool, which is only
    ///   opened asynchronously (``open(_:)``).
    public static func openNow(_ options: StoreOptions) throws -> Opened {
        if let address = try options.poolAddress() {
            throw StoreError(.poolAddress, "the store is the team pool \(address), which this API cannot open (it reads the local store only)")
        }
        let file = StoreDatabase.fileURL(in: options.location)
        let directoryExisted = FileManager.default.fileExists(atPath: options.location.directory.path)
        let databaseExisted = FileManager.default.fileExists(atPath: file.path)
        let database = try StoreDatabase.open(at: options.location)
        // Temporary files a killed chappie left (tokens or a key in clear) go first.
        for directory in [options.location.directory, options.location.keyDirectory, options.location.directory.appendingPathComponent("recovery")] {
            PrivateFile.removeStaleTemporaries(in: directory)
        }
        let setup = database.keySetup
        var preferPassphrase = false
        if case .passphrase = setup { preferPassphrase = true }
        let source = KeySource.choose(
            keyFile: options.keyFile, environment: options.environment, defaultKeyFile: options.location.defaultKeyFile,
            canPrompt: options.interactive, preferPassphrase: preferPassphrase, passphraseGiven: options.passphrase != nil)
        let store: SQLiteAccountStore
        do {
            store = try unlock(database, source: source, setup: setup, options: options)
        } catch {
            // A store this open made and could not unlock (a key file that is not there, a
            // passphrase not entered) holds nothing: it is not left behind.
            if !databaseExisted {
                for suffix in ["", "-wal", "-shm", "-journal"] { unlink(file.path + suffix) }
                unlink(options.location.keyLockFile.path)
                rmdir(options.location.keyLockFile.deletingLastPathComponent().path)
                if !directoryExisted { rmdir(options.location.directory.path) }
            }
            throw error
        }
        // Tokens a refresh redeemed but could not store are adopted before anything else happens.
        store.adoptRecoveredTokens()
        bindToIdentities(store)
        return Opened(store: store, local: store, source: source, setup: setup)
    }

    /// Once, after migration 0004: reseals credentials bound to row ids to the accounts' UUIDs,
    /// holding the key lock exclusive (no refresh is between redemption and commit meanwhile). Not
    /// a condition of opening: when the lock is busy (a refresh in progress) or the reseal fails (a
    /// recovery file that does not open, a busy database), row-bound credentials go on opening and
    /// a later open tries again.
    private static func bindToIdentities(_ store: SQLiteAccountStore) {
        guard store.acceptsRowBoundCredentials, let lock = try? FileLock.tryAcquire(store.keyLockURL, mode: .exclusive) else { return }
        defer { withExtendedLifetime(lock) {} }
        _ = try? store.bindCredentialsToIdentities()
    }

    private static func unlock(_ database: StoreDatabase, source: KeySource, setup: StoreDatabase.KeySetup, options: StoreOptions) throws
        -> SQLiteAccountStore
    {
        switch source {
        case .keyFile(let url):
            return try unlock(database, keyFileAt: url, createIfNew: false)
        case .systemdCredential(let url):
            let read: @Sendable () throws -> SecretKey = { try KeyFile.read(url, trustingLocation: true) }
            return try database.unlock(with: try read(), keySource: read)
        case .defaultKeyFile(let url):
            if case .passphrase = setup {
                throw VaultError(
                    .passphraseUnavailable,
                    "this store is sealed with a passphrase: set CHAPPIE_PASSPHRASE, or run chappie on a terminal to be asked for it")
            }
            return try unlock(database, keyFileAt: url, createIfNew: true)
        case .passphrase(let fromEnvironment):
            let passphrase = try passphrase(options, fromEnvironment: fromEnvironment, confirm: setup == .none)
            switch setup {
            case .passphrase(let kdf, _):
                return try database.unlock(with: try kdf.deriveKey(from: passphrase))
            case .none:
                let kdf = PassphraseKDF.fresh()
                let key = try kdf.deriveKey(from: passphrase)
                return try database.unlock(with: key, passphraseKDF: kdf)
            case .key(let id):
                throw StoreError(
                    .wrongKey,
                    "this store is sealed with a key file (key \(id)), not a passphrase: unset CHAPPIE_PASSPHRASE or pass --key-file; nothing was changed"
                )
            }
        }
    }

    /// Reads a passphrase from `CHAPPIE_PASSPHRASE` or the terminal (twice for a new store).
    /// Runs `body` with the key file's key, holding the key lock shared (so a rotation in progress
    /// is waited for rather than half seen); for a new store's default key file, a new key is
    /// written first, holding the lock exclusive, so that two first runs make one key.
    ///
    /// - Parameters:
    ///   - setup: How the store's key is set up.
    ///   - missing: The message when the store has a key and the file is missing.
    package static func withKeyFile<T>(
        _ url: URL, lock: URL, createIfNew: Bool, setup: StoreDatabase.KeySetup, missing: (String) -> String, _ body: (SecretKey) throws -> T
    ) throws -> T {
        let creating = !FileManager.default.fileExists(atPath: url.path)
        let held = try FileLock.acquireBlocking(lock, mode: creating ? .exclusive : .shared)
        defer { withExtendedLifetime(held) {} }
        if !FileManager.default.fileExists(atPath: url.path) {
            switch setup {
            case .none where createIfNew:
                try KeyFile.write(SecretKey.generate(), to: url)
            case .none:
                throw VaultError(
                    .keyFile,
                    "key file \(url.path) does not exist; nothing was stored. Make one with: (umask 077; head -c 32 /dev/urandom | base64 > \(url.path)), or leave out --key-file and chappie makes its own"
                )
            case .key(let id), .passphrase(_, let id):
                throw StoreError(.missingKey, missing(id))
            }
        }
        return try body(try KeyFile.read(url))
    }

    package static func passphrase(_ options: StoreOptions, fromEnvironment: Bool, confirm: Bool, variable: String = "CHAPPIE_PASSPHRASE")
        throws(VaultError) -> SecretBytes
    {
        if fromEnvironment, let given = variable == "CHAPPIE_NEW_PASSPHRASE" ? options.newPassphrase : options.passphrase {
            guard given.count > 0 else { throw VaultError(.passphraseUnavailable, "\(variable) is empty; a passphrase cannot be empty") }
            return given
        }
        if fromEnvironment, let text = options.environment[variable] {
            guard !text.isEmpty else { throw VaultError(.passphraseUnavailable, "\(variable) is empty; a passphrase cannot be empty") }
            return SecretBytes(utf8: text)
        }
        guard let first = PassphrasePrompt.ask("Passphrase for the chappie store: "), first.count > 0 else {
            throw VaultError(.passphraseUnavailable, "no passphrase was entered")
        }
        if confirm {
            guard let second = PassphrasePrompt.ask("The same passphrase again: "), second.constantTimeEquals(first) else {
                throw VaultError(.passphraseUnavailable, "the two passphrases differ; nothing was set up")
            }
        }
        return first
    }

    /// Unlocks with a key file, finishing or undoing an interrupted rotation (`<file>.new`), and,
    /// for a new store, creating the default key file first. The key is read holding the key lock
    /// shared, so a rotation in progress is waited for rather than half seen; an interrupted one is
    /// finished holding it exclusive.
    private static func unlock(_ database: StoreDatabase, keyFileAt url: URL, createIfNew: Bool) throws -> SQLiteAccountStore {
        let keyLock = database.location.keyLockFile
        let pending = KeyRotation.pendingURL(for: url)
        let source: @Sendable () throws -> SecretKey = { try KeyFile.read(url) }
        if FileManager.default.fileExists(atPath: pending.path) {
            let lock = try FileLock.acquireBlocking(keyLock, mode: .exclusive)
            defer { withExtendedLifetime(lock) {} }
            // The rotation may have finished while this process waited.
            if FileManager.default.fileExists(atPath: pending.path) {
                return try KeyRotation.recover(database, keyFile: url, pending: pending)
            }
        }
        return try withKeyFile(
            url, lock: keyLock, createIfNew: createIfNew, setup: database.currentKeySetup(),
            missing: { id in
                "the store is sealed with key \(id), but the key file \(url.path) is missing; restore it from your backup (see security.md in share/doc/chappie)"
            },
            { key in try database.unlock(with: key, keySource: source) })
    }
}

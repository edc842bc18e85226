public import ChappieStore
import ChappieCore
import ChappieVault
import Foundation
import PostgresNIO

/// The team pool's backend for ``StoreOptions/poolBackend``: set it, and a `postgres://` address
/// opens the pool.
///
/// ```swift
/// var options = StoreOptions(storeURL: "postgres://chappie@db.internal/chappie?sslmode=verify-full")
/// options.poolBackend = TeamPool()
/// ```
public struct TeamPool: PoolBackend {
    /// How long one operation may wait for the database before it is "try again later".
    let deadline: Duration
    /// How long one statement may run on the server (default: three quarters of the deadline).
    let statementTimeout: Duration?

    public init() {
        deadline = .seconds(20)
        statementTimeout = nil
    }

    /// A pool whose operations may take up to `deadline`, and its statements `statementTimeout`
    /// (tests that share a busy process with hundreds of others).
    package init(deadline: Duration, statementTimeout: Duration? = nil) {
        self.deadline = deadline
        self.statementTimeout = statementTimeout
    }

    public func open(_ address: PoolAddress, options: StoreOptions) async throws -> StoreOpener.Opened {
        try await PoolOpener.open(address, options: options, deadline: deadline, statementTimeout: statementTimeout)
    }
}

/// Opens the team pool with this machine's key: the same sources as for the local store
/// (docs/security.md, "Where the key comes from"), proved against the pool's key check. The first machine to open a new pool
/// sets its key; every other machine must have that key (docs/team-pool.md).
enum PoolOpener {
    static func open(_ address: PoolAddress, options: StoreOptions, deadline: Duration, statementTimeout: Duration?) async throws
        -> StoreOpener.Opened
    {
        let location = options.location
        try FilePermissions.ensurePrivateDirectory(location.directory)
        let database = try await PoolDatabase.connect(
            address: address, machine: options.machineName, deadline: deadline, statementTimeout: statementTimeout)
        let setup = database.keySetup
        var preferPassphrase = false
        if case .passphrase = setup { preferPassphrase = true }
        let source = KeySource.choose(
            keyFile: options.keyFile, environment: options.environment, defaultKeyFile: location.defaultKeyFile,
            canPrompt: options.interactive, preferPassphrase: preferPassphrase, passphraseGiven: options.passphrase != nil)
        let missing = { (id: String) in
            "the pool \(address) is sealed with key \(id), which this machine does not have: install the pool's key file here (team-pool.md in share/doc/chappie)"
        }
        let key: SecretKey
        var keySource: (@Sendable () throws -> SecretKey)?
        var kdf: PassphraseKDF?
        switch source {
        case .keyFile(let url):
            key = try StoreOpener.withKeyFile(url, lock: location.keyLockFile, createIfNew: false, setup: setup, missing: missing) { $0 }
            keySource = { try KeyFile.read(url) }
        case .systemdCredential(let url):
            key = try KeyFile.read(url, trustingLocation: true)
            keySource = { try KeyFile.read(url, trustingLocation: true) }
        case .defaultKeyFile(let url):
            if case .passphrase = setup {
                throw VaultError(
                    .passphraseUnavailable,
                    "this pool is sealed with a passphrase: set CHAPPIE_PASSPHRASE, or run chappie on a terminal to be asked for it")
            }
            key = try StoreOpener.withKeyFile(url, lock: location.keyLockFile, createIfNew: true, setup: setup, missing: missing) { $0 }
            keySource = { try KeyFile.read(url) }
        case .passphrase(let fromEnvironment):
            let passphrase = try StoreOpener.passphrase(options, fromEnvironment: fromEnvironment, confirm: setup == .none)
            switch setup {
            case .passphrase(let parameters, _):
                key = try parameters.deriveKey(from: passphrase)
            case .none:
                kdf = PassphraseKDF.fresh()
                key = try kdf!.deriveKey(from: passphrase)
            case .key(let id):
                throw StoreError(
                    .wrongKey,
                    "the pool is sealed with a key file (key \(id)), not a passphrase: unset CHAPPIE_PASSPHRASE or pass --key-file; nothing was changed"
                )
            }
        }
        let store = PostgresAccountStore(
            database: database, location: location, instance: try instanceID(in: location), key: key, keySource: keySource)
        try await store.prove(passphraseKDF: kdf)
        // Tokens this machine redeemed but could not store are adopted before anything else happens.
        await store.adoptRecoveredTokens()
        return StoreOpener.Opened(store: store, local: nil, source: source, setup: setup)
    }
}

/// The data directory's own id in a pool: read from `pool-instance` (0600), made on first use.
private func instanceID(in location: StoreLocation) throws -> UUID {
    let file = location.directory.appendingPathComponent("pool-instance")
    if let text = try? String(contentsOf: file, encoding: .utf8) {
        guard let id = UUID(uuidString: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw StoreError(.corrupt, "\(file.path) does not hold a UUID; remove it (a new one is made), unless a refresh there is unfinished")
        }
        return id
    }
    let id = UUID()
    do {
        try PrivateFile.write(SecretBytes(utf8: id.uuidString.lowercased() + "\n"), to: file)
    } catch {
        throw StoreError(.io, "cannot write \(file.path): \(error)")
    }
    return id
}

extension PostgresAccountStore {
    /// Proves the key against the pool's key check, or, for a new pool, makes it the pool's key.
    ///
    /// - Throws: ``StoreError`` `.wrongKey` (nothing written) when the key check does not open.
    func prove(passphraseKDF: PassphraseKDF?) async throws(StoreError) {
        let key = self.key
        let address = database.address
        @Sendable func refuse(_ storedID: String?) -> StoreError {
            StoreError(
                .wrongKey,
                "this machine's key (id \(key.id)) does not open the pool \(address), which is sealed with key \(storedID ?? "?"); install the pool's key (team-pool.md in share/doc/chappie); nothing was changed"
            )
        }
        // A read first: a wrong key must not even start a write.
        let (check, storedID) = try await database.read { connection in
            (try await PoolDatabase.setting(.keyCheck, connection), try await PoolDatabase.setting(.keyID, connection))
        }
        if let check {
            guard KeyCheck.verify(check, key: key) else { throw refuse(storedID.map { String(decoding: $0, as: UTF8.self) }) }
            return
        }
        try await database.write { connection in
            // Two machines setting up one new pool at once: one sets the key, the other checks it.
            try await connection.query("LOCK TABLE settings IN EXCLUSIVE MODE", logger: Self.logger)
            if let stored = try await PoolDatabase.setting(.keyCheck, connection) {
                guard KeyCheck.verify(stored, key: key) else {
                    throw refuse(try await PoolDatabase.setting(.keyID, connection).map { String(decoding: $0, as: UTF8.self) })
                }
                return
            }
            try await PoolDatabase.setSetting(.keyCheck, KeyCheck.make(key: key), connection)
            try await PoolDatabase.setSetting(.keyID, Data(key.id.utf8), connection)
            try await PoolDatabase.setSetting(.passphraseKDF, try passphraseKDF.map { try JSONEncoder().encode($0) }, connection)
            try await self.audit(
                .keyCreated, account: nil, detail: "key \(key.id) of the pool\(passphraseKDF == nil ? "" : ", from a passphrase")", connection)
        }
    }
}

public import ChappieVault
public import Foundation

/// Where the store is and where its key comes from, as the command line and environment say.
public struct StoreOptions: Sendable {
    /// `--home`.
    public var home: String?
    /// `--key-file`.
    public var keyFile: String?
    /// The process environment (`CHAPPIE_HOME`, `CHAPPIE_KEY_FILE`, `CHAPPIE_PASSPHRASE`, …).
    public var environment: [String: String]
    /// Whether a passphrase may be asked for on the terminal.
    public var interactive: Bool
    /// The passphrase, when it was taken out of the environment already (``SecretEnvironment``);
    /// it wins over `CHAPPIE_PASSPHRASE` in `environment`.
    public var passphrase: SecretBytes?
    /// The new passphrase for a rotation, likewise (over `CHAPPIE_NEW_PASSPHRASE`).
    public var newPassphrase: SecretBytes?
    /// `--store`: the team pool's address (`postgres://…`), over `$CHAPPIE_STORE_URL` and the
    /// data directory's `store-url` file.
    public var storeURL: String?
    /// `--machine`: this machine's name in a team pool, over `$CHAPPIE_MACHINE` and the host name.
    public var machine: String?
    /// What opens a team pool (`ChappiePool`'s `TeamPool`). `nil` by default: a program that does
    /// not link PostgreSQL's client opens the local store only, and says so for a pool's address.
    public var poolBackend: (any PoolBackend)?

    /// Creates options; by default from this process's environment and terminal.
    public init(
        home: String? = nil, keyFile: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment, interactive: Bool = false,
        passphrase: SecretBytes? = nil, newPassphrase: SecretBytes? = nil, storeURL: String? = nil, machine: String? = nil
    ) {
        self.home = home
        self.keyFile = keyFile
        self.environment = environment
        self.interactive = interactive
        self.passphrase = passphrase
        self.newPassphrase = newPassphrase
        self.storeURL = storeURL
        self.machine = machine
    }

    /// The data directory these options name.
    public var location: StoreLocation { .resolve(home: home, environment: environment) }

    /// The file in the data directory that names a team pool for everything run on it.
    public static let storeURLFileName = "store-url"

    /// The team pool these options select, if any: `--store`, else `$CHAPPIE_STORE_URL`, else the
    /// first line of `store-url` in the data directory (a file of yours, 0600: it may hold the
    /// database password). `nil` for the local SQLite store. An empty `--store` or variable means
    /// the local store.
    ///
    /// - Throws: ``StoreError`` `.poolAddress` for an address that cannot be used, or a `store-url`
    ///   file that is not private.
    public func poolAddress() throws(StoreError) -> PoolAddress? {
        if let given = storeURL ?? environment["CHAPPIE_STORE_URL"] {
            return given.isEmpty ? nil : try PoolAddress(given, environment: environment)
        }
        let file = location.directory.appendingPathComponent(Self.storeURLFileName)
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        let line: SecretBytes
        do {
            line = try PrivateSecretFile.firstLine(of: file, what: "store-url file", trimmingWhitespace: true)
        } catch {
            throw StoreError(.poolAddress, error.message)
        }
        return try PoolAddress(line.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }, environment: environment)
    }

    /// This machine's name in a team pool: `--machine`, else `$CHAPPIE_MACHINE`, else the host name.
    public var machineName: String {
        if let machine, !machine.isEmpty { return machine }
        if let machine = environment["CHAPPIE_MACHINE"], !machine.isEmpty { return machine }
        return Self.hostName
    }

    /// This host's name, without its domain.
    static var hostName: String {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "localhost" }
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return host.split(separator: ".").first.map(String.init) ?? "localhost"
    }
}

import ChappieDaemonClient
public import Chappie
public import ChappieCore
import ChappieStore
import ChappiePool
import ChappieVault
public import Foundation
public import Logging

/// Where the store is, where its key comes from, and which services chappie talks to: what the
/// command line and the environment say.
public struct ServiceOptions: Sendable {
    /// The data directory given with `--home` (else `$CHAPPIE_HOME`, `$XDG_DATA_HOME/chappie`).
    public var home: String?
    /// The key file given with `--key-file`.
    public var keyFile: String?
    /// The team pool given with `--store` (else `$CHAPPIE_STORE_URL`, the `store-url` file).
    public var storeURL: String?
    /// This machine's name in a team pool, given with `--machine`.
    public var machine: String?
    /// The issuer and backend.
    public var endpoints: ChappieEndpoints
    /// Whether a passphrase may be asked for on the terminal.
    public var interactive: Bool

    /// Options; `interactive` defaults to whether standard input is a terminal.
    public init(
        home: String? = nil, keyFile: String? = nil, storeURL: String? = nil, machine: String? = nil,
        endpoints: ChappieEndpoints = ChappieEndpoints(),
        interactive: Bool? = nil
    ) {
        self.home = home
        self.keyFile = keyFile
        self.storeURL = storeURL
        self.machine = machine
        self.endpoints = endpoints
        self.interactive = interactive ?? PassphrasePrompt.isInteractive
    }

    /// These options with the settings where nothing overrides them: the store's `originator`, and
    /// this machine's `ca-file` (``LocalSettings``) unless `--ca-file` or `CHAPPIE_CA_FILE` named a
    /// file (every client of the services is made from ``endpoints`` afterwards). A `ca-file` the
    /// store holds is read only from this machine's own database (where chappie kept it before);
    /// a team pool's is ignored with a warning: whoever writes the pool must not choose whom every
    /// machine trusts.
    ///
    /// The reads run outside the caller's cancellation: a signal that stops a command while it
    /// opens the store must not make them a failure (the command stops cleanly at its next step).
    func applyingSettings(of store: any StoreSettings, isLocal: Bool) async throws -> ServiceOptions {
        let (originator, storedCAFile) = try await Task.detached {
            (try await store.trafficSetting(.originator), try await store.trafficSetting(.caFile))
        }.value
        // Checked again as they are read: a team pool's database is not trusted with more than it
        // is given (a value written around `config set` is not used).
        var options = self
        if options.endpoints.originator == ChappieEndpoints.defaultOriginator, let originator, ChappieEndpoints.isValidOriginator(originator) {
            options.endpoints.originator = originator
        }
        let caFile = SettingsService.caFile(local: try LocalSettings.load(from: location.directory), stored: storedCAFile, storeIsLocal: isLocal)
        if caFile == nil, storedCAFile != nil, !isLocal {
            Logger(label: "chappie.settings").warning(
                "the team pool sets ca-file for this machine; chappie ignores it: the certificate authorities to trust are this machine's own setting (chappie config set ca-file FILE)"
            )
        }
        if options.endpoints.trust.additionalFiles.isEmpty, let caFile, caFile.hasPrefix("/") { options.endpoints.trust.additionalFiles = [caFile] }
        return options
    }

    /// The data directory these options name.
    public var dataDirectory: URL { location.directory }

    /// The running daemon's socket in the data directory.
    public var daemonSocket: URL { DaemonClient.defaultSocket(in: location) }

    /// Whether these options name a store on this machine, not a team pool: what a caller that must
    /// not reach the network checks first (`chappie prompt`).
    public var namesLocalStore: Bool {
        do {
            return try storeOptions.poolAddress() == nil
        } catch {
            return false
        }
    }

    var location: StoreLocation { StoreLocation.resolve(home: home) }

    /// Whether there is a store to read: a team pool, or this machine's database. A command that
    /// only reads creates none (no database, no key, no directory made private) when it is not.
    ///
    /// - Throws: ``StoreError`` when the data directory holds files of someone else's and none of
    ///   chappie's (`--home ~`), as opening it would.
    public func storeExists() throws(StoreError) -> Bool {
        guard namesLocalStore else { return true }
        try FilePermissions.refuseForeignDirectory(location.directory)
        return FileManager.default.fileExists(atPath: StoreDatabase.fileURL(in: location).path)
    }

    var storeOptions: StoreOptions {
        var options = StoreOptions(
            home: home, keyFile: keyFile, interactive: interactive, passphrase: EnvironmentSecrets.passphrase,
            newPassphrase: EnvironmentSecrets.newPassphrase, storeURL: storeURL, machine: machine)
        options.poolBackend = TeamPool()
        return options
    }
}

/// The passphrases given in the environment (`CHAPPIE_PASSPHRASE`, `CHAPPIE_NEW_PASSPHRASE`,
/// `CHAPPIE_BACKUP_PASSPHRASE`), taken
/// out of it once, when chappie starts, so that no child process or later reader sees them.
public enum EnvironmentSecrets {
    static let passphrase = SecretEnvironment.take("CHAPPIE_PASSPHRASE")
    static let newPassphrase = SecretEnvironment.take("CHAPPIE_NEW_PASSPHRASE")
    static let backupPassphrase = SecretEnvironment.take("CHAPPIE_BACKUP_PASSPHRASE")

    /// Makes the process non-dumpable (``ProcessHardening``), then takes them all, before anything
    /// reads the environment.
    public static func take() {
        ProcessHardening.apply()
        _ = (passphrase, newPassphrase, backupPassphrase)
    }
}

/// Everything chappie does, over one open store: what the command line calls.
///
/// ```swift
/// let services = try await ChappieServices.open(ServiceOptions(home: "~/chappie-test"))
/// for summary in try await services.accounts.list() { print(summary.account.name) }
/// ```
public struct ChappieServices: Sendable {
    /// Accounts: list, show, import, switch, rename, remove, reserve.
    public let accounts: AccountsService
    /// Sign-in, tokens and refreshes.
    public let tokens: TokenService
    /// Usage polls, history, reports, `--best`.
    public let usage: UsageService
    /// The store's settings.
    public let settings: SettingsService
    /// The store's key: status and rotation.
    public let keys: KeyService
    /// Codex homes for `chappie exec`.
    public let exec: ExecService
    /// `chappie backup` and `chappie restore`.
    public let backups: BackupService
    /// `chappie lease`: accounts leased to jobs by headroom and free slots.
    public let leases: LeaseService
    /// `chappie credits`: banked rate-limit resets, listed and redeemed on request.
    public let credits: ResetCreditsService
    /// `--failover` for `exec` and `lease run`.
    public let failover: JobFailover
    private let store: any AccountStore
    private let options: ServiceOptions

    /// Opens and unlocks the store (asking for a passphrase on a terminal if the store has one).
    ///
    /// - Throws: ``StoreError`` or ``VaultError`` (configuration or key problems).
    public static func open(_ options: ServiceOptions) async throws -> ChappieServices {
        let opened = try await StoreOpener.open(options.storeOptions)
        return ChappieServices(opened: opened, options: try await options.applyingSettings(of: opened.store, isLocal: opened.local != nil))
    }

    private init(opened: StoreOpener.Opened, options: ServiceOptions) {
        let store = opened.store
        self.store = store
        self.options = options
        tokens = TokenService(store: store, endpoints: options.endpoints)
        accounts = AccountsService(store: store, signatures: tokens.signatures)
        usage = UsageService(store: store, endpoints: options.endpoints)
        settings = SettingsService(store: store, directory: store.location.directory, storeIsLocal: opened.local != nil)
        keys = KeyService(opened: opened, options: options.storeOptions)
        exec = ExecService(store: store, tokens: tokens, environment: accounts.environment)
        backups = BackupService(
            store: store, signatures: tokens.signatures,
            ownFiles: OwnFiles(location: store.location, source: opened.source, environment: ProcessInfo.processInfo.environment))
        leases = LeaseService(store: store, usage: usage)
        failover = JobFailover(store: store, usage: usage, exec: exec, leases: leases, http: options.endpoints.httpClient())
        credits = ResetCreditsService(store: store, tokens: usage.tokens, http: options.endpoints.httpClient())
    }

    /// The data directory.
    public var dataDirectory: URL { store.location.directory }

    /// Why a command's output may not be written to `file` (one of chappie's own files, inside its
    /// directories, a missing directory, not a regular file), or `nil` when it may.
    public static func refusalToWrite(_ file: URL, options: ServiceOptions) -> String? {
        let keyFile = options.keyFile.map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) }
        return OwnFiles(location: options.location, source: keyFile.map(KeySource.keyFile), environment: ProcessInfo.processInfo.environment)
            .refusal(forWriting: file)
    }

    /// The newest `limit` entries of the audit log, newest first: of these `kinds` (raw values)
    /// when given, else of every kind but usage polls unless `polls` (the daemon polls every few
    /// minutes, and their entries would drown the rest); about `account` and from `since` when given.
    package func auditLog(kinds: [String]?, polls: Bool, account: AccountName?, since: Date?, limit: Int) async throws -> [AuditEvent] {
        try await store.events(
            AuditQuery(
                kinds: kinds, excludedKinds: polls || kinds != nil ? [] : [AuditEventKind.usagePolled.rawValue], accountName: account?.rawValue,
                since: since, limit: limit))
    }

    /// Opens the store for a daemon and claims its data directory, after checking that no daemon
    /// answers on `socket` (default: the data directory's; another data directory's daemon may use
    /// the same path).
    ///
    /// - Throws: ``ServiceError`` when another daemon runs on the directory or the socket; the
    ///   store's errors.
    public static func startingDaemon(_ options: ServiceOptions, socket: URL?) async throws -> (
        services: ChappieServices, instance: DaemonInstance, socket: URL
    ) {
        let services = try await ChappieServices.open(options)
        let instance = try services.claimDaemonInstance()
        let route = DaemonOrStore(options: options, socket: socket)
        if try await route.daemonAnswers(timeout: .seconds(2)) {
            throw ServiceError(.invalidInput, "a daemon is already running on \(route.socket.path)")
        }
        return (services, instance, route.socket)
    }

    /// Claims the data directory for a daemon (one daemon per directory).
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` when another daemon runs on it.
    public func claimDaemonInstance() throws -> DaemonInstance {
        try DaemonInstance.claim(in: store.location)
    }

    /// The daemon over this store, holding the data directory's claim.
    public func daemon(configuration: DaemonConfiguration, instance: DaemonInstance, logger: Logger) -> Daemon {
        var configuration = configuration
        // One machine's store: its daemon is the one to tell of every reading. On a team pool, the
        // daemon that polled an account tells of it, so that three machines do not say it thrice.
        configuration.alertsOnEveryReading = settings.storeIsLocal
        return Daemon(store: store, endpoints: options.endpoints, configuration: configuration, instance: instance, logger: logger)
    }

    /// An SDK client streaming responses as one account, over this store.
    public func client(for account: AccountName, transport: ChappieStreamingTransportPolicy = .default) -> ChappieClient {
        Chappie.client(
            configuration: ChappieConfiguration(
                account: account, store: options.storeOptions, endpoints: options.endpoints, streamingTransportPolicy: transport))
    }
}

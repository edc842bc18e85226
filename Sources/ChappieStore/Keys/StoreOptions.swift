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

    /// Creates options; by default from this process's environment and terminal.
    public init(
        home: String? = nil, keyFile: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment, interactive: Bool = false,
        passphrase: SecretBytes? = nil, newPassphrase: SecretBytes? = nil
    ) {
        self.home = home
        self.keyFile = keyFile
        self.environment = environment
        self.interactive = interactive
        self.passphrase = passphrase
        self.newPassphrase = newPassphrase
    }

    /// The data directory these options name.
    public var location: StoreLocation { .resolve(home: home, environment: environment) }
}

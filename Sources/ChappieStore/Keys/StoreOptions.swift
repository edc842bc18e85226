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

    /// Creates options; by default from this process's environment and terminal.
    public init(
        home: String? = nil, keyFile: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment, interactive: Bool = false
    ) {
        self.home = home
        self.keyFile = keyFile
        self.environment = environment
        self.interactive = interactive
    }

    /// The data directory these options name.
    public var location: StoreLocation { .resolve(home: home, environment: environment) }
}

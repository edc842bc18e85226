public import Foundation

/// Where the master key comes from, in the order chappie looks (docs/security.md, "Where the key comes from").
public enum KeySource: Sendable, Equatable, CustomStringConvertible {
    /// `--key-file` or `$CHAPPIE_KEY_FILE`.
    case keyFile(URL)
    /// `$CREDENTIALS_DIRECTORY/chappie.key`, from systemd's `LoadCredential=`.
    case systemdCredential(URL)
    /// A passphrase stretched with Argon2id: from `$CHAPPIE_PASSPHRASE`, or asked on the terminal.
    case passphrase(fromEnvironment: Bool)
    /// The default key file, created 0600 on first use.
    case defaultKeyFile(URL)

    /// Picks the source from the options and environment.
    ///
    /// - Parameters:
    ///   - keyFile: The `--key-file` option, if given.
    ///   - environment: The process environment.
    ///   - defaultKeyFile: Where the default key file lives.
    ///   - canPrompt: Whether a terminal is attached to ask for a passphrase.
    ///   - preferPassphrase: Whether the store was set up with a passphrase (then it is asked for
    ///     instead of creating a key file).
    ///   - passphraseGiven: Whether `CHAPPIE_PASSPHRASE` was already taken out of the environment.
    public static func choose(
        keyFile: String?, environment: [String: String], defaultKeyFile: URL, canPrompt: Bool, preferPassphrase: Bool,
        passphraseGiven: Bool = false
    ) -> KeySource {
        if let path = keyFile ?? environment["CHAPPIE_KEY_FILE"], !path.isEmpty {
            return .keyFile(URL(fileURLWithPath: (path as NSString).expandingTildeInPath))
        }
        if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
            let url = URL(fileURLWithPath: directory).appendingPathComponent("chappie.key")
            if FileManager.default.fileExists(atPath: url.path) { return .systemdCredential(url) }
        }
        if passphraseGiven || environment["CHAPPIE_PASSPHRASE"] != nil { return .passphrase(fromEnvironment: true) }
        if preferPassphrase && canPrompt { return .passphrase(fromEnvironment: false) }
        return .defaultKeyFile(defaultKeyFile)
    }

    /// A short description for `chappie key status`.
    public var description: String {
        switch self {
        case .keyFile(let url): "key file \(url.path)"
        case .systemdCredential(let url): "systemd credential \(url.path)"
        case .passphrase(let fromEnvironment): fromEnvironment ? "passphrase from CHAPPIE_PASSPHRASE" : "passphrase (asked on the terminal)"
        case .defaultKeyFile(let url): "key file \(url.path) (default)"
        }
    }
}

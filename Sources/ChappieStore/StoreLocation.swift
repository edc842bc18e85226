public import Foundation

/// Where chappie keeps its data: the database, locks and (by default) the key file.
///
/// Chosen in this order: an explicit `--home`, `$CHAPPIE_HOME`, `$XDG_DATA_HOME/chappie`,
/// `~/.local/share/chappie`. The default key file is in the explicit home, or else in
/// `$XDG_CONFIG_HOME/chappie` (`~/.config/chappie`).
public struct StoreLocation: Sendable, Equatable {
    /// The data directory.
    public var directory: URL
    /// The directory of the default key file: the data directory when it was named explicitly
    /// (`--home`, `$CHAPPIE_HOME`), else `$XDG_CONFIG_HOME/chappie` (`~/.config/chappie`).
    public var keyDirectory: URL

    /// A location in an explicit directory, which also holds the default key file.
    public init(directory: URL) {
        self.directory = directory.standardizedFileURL
        self.keyDirectory = self.directory
    }

    /// A location with the data and the default key file in separate directories.
    public init(directory: URL, keyDirectory: URL) {
        self.directory = directory.standardizedFileURL
        self.keyDirectory = keyDirectory.standardizedFileURL
    }

    /// The default key file, used when no other key source is given.
    public var defaultKeyFile: URL { keyDirectory.appendingPathComponent("chappie.key") }

    /// The lock that orders key changes against everything sealed with the key: taken shared from
    /// a refresh token's redemption to its commit and while the key is read, exclusive by a rotation.
    public var keyLockFile: URL { directory.appendingPathComponent("locks/key.lock") }

    /// The location chosen from an explicit directory (if any) and the environment.
    ///
    /// - Parameters:
    ///   - home: The `--home` option, if given; `~` is expanded.
    ///   - environment: The process environment.
    public static func resolve(home: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> StoreLocation {
        if let home, !home.isEmpty { return StoreLocation(directory: URL(fileURLWithPath: expandTilde(home))) }
        if let home = environment["CHAPPIE_HOME"], !home.isEmpty {
            return StoreLocation(directory: URL(fileURLWithPath: expandTilde(home)))
        }
        let userHome = URL(fileURLWithPath: environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory())
        let data =
            environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
            ?? userHome.appendingPathComponent(".local/share")
        let config =
            environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
            ?? userHome.appendingPathComponent(".config")
        return StoreLocation(directory: data.appendingPathComponent("chappie"), keyDirectory: config.appendingPathComponent("chappie"))
    }

    private static func expandTilde(_ path: String) -> String {
        (path as NSString).expandingTildeInPath
    }
}

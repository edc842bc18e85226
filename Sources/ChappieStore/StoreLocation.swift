public import Foundation

/// Where chappie keeps its data: the database, locks and (by default) the key file.
///
/// Chosen in this order: an explicit `--home`, `$CHAPPIE_HOME`, `$XDG_DATA_HOME/chappie`,
/// `~/.local/share/chappie`.
public struct StoreLocation: Sendable, Equatable {
    /// The data directory.
    public var directory: URL

    /// A location in an explicit directory.
    public init(directory: URL) {
        self.directory = directory.standardizedFileURL
    }

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
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return StoreLocation(directory: URL(fileURLWithPath: data).appendingPathComponent("chappie"))
        }
        let userHome = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return StoreLocation(directory: URL(fileURLWithPath: userHome).appendingPathComponent(".local/share/chappie"))
    }

    private static func expandTilde(_ path: String) -> String {
        (path as NSString).expandingTildeInPath
    }
}

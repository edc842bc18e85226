public import Foundation
import GRDB

/// The names of a local store's accounts, read without its key: names are not sealed, so shell
/// completion can offer them without unlocking the store (a passphrase store never prompts).
public enum AccountNames {
    /// The names, sorted; none when the store has no database yet, is a team pool's, or cannot be
    /// read. Opens the database read-only and creates nothing.
    public static func read(in location: StoreLocation) -> [String] {
        let file = location.directory.appendingPathComponent(StoreDatabase.fileName).path
        guard FileManager.default.fileExists(atPath: file) else { return [] }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(1)
        guard let database = try? DatabaseQueue(path: file, configuration: configuration) else { return [] }
        return (try? database.read { try String.fetchAll($0, sql: "SELECT name FROM accounts ORDER BY name") }) ?? []
    }
}

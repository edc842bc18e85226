import Foundation
import ChappieCore
import GRDB

/// The names of a local store's accounts, read without its key: names are not sealed, so shell
/// completion can offer them without unlocking the store (a passphrase store never prompts).
public enum AccountNames {
    /// The names, sorted; none when the store has no database yet, is a team pool's, or cannot be
    /// read. Opens the database read-only and creates nothing.
    /// Only names that pass ``AccountName``'s rule are returned: a shell expands what completion
    /// offers, and a database planted in a `--home` could hold `$(…)`.
    public static func read(in location: StoreLocation) -> [String] {
        let file = location.directory.appendingPathComponent(StoreDatabase.fileName).path
        // A regular file only: a FIFO would hang the shell's Tab.
        var info = stat()
        guard stat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return [] }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(1)
        guard let database = try? DatabaseQueue(path: file, configuration: configuration) else { return [] }
        let names = (try? database.read { try String.fetchAll($0, sql: "SELECT name FROM accounts ORDER BY name") }) ?? []
        return names.filter { (try? AccountName($0)) != nil }
    }
}

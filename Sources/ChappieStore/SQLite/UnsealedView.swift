public import ChappieCore
import Foundation
import GRDB

/// What a local store holds that is not sealed (accounts and their newest usage readings), read
/// without its key and without writing: for `chappie prompt`, which must never ask a passphrase,
/// wait on a lock, or change the store.
public enum UnsealedView {
    /// The accounts and each one's newest `codex` reading; `nil` when the store has no database
    /// yet, is busy for more than a moment, or cannot be read. Opens the database read-only.
    public static func read(in location: StoreLocation) -> (accounts: [Account], latest: [Int64: UsageSample])? {
        let file = location.directory.appendingPathComponent(StoreDatabase.fileName).path
        // A regular file only: a FIFO would hang the prompt.
        var info = stat()
        guard lstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(0.1)
        guard let database = try? DatabaseQueue(path: file, configuration: configuration) else { return nil }
        return try? database.read { db in
            let active = try SQLiteAccountStore.activeID(db)
            let accounts = try AccountRecord.order(AccountRecord.Columns.name).fetchAll(db).compactMap { try? $0.account(activeID: active) }
            return (accounts, try SQLiteAccountStore.latestUsage(db))
        }
    }
}

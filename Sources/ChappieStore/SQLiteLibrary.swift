import GRDB

/// Facts about the SQLite library GRDB runs on.
public enum SQLiteLibrary {
    /// The version of the SQLite this process runs with, for example `3.40.1`.
    public static var version: String {
        let queue = try? DatabaseQueue()
        return (try? queue?.read { db in try String.fetchOne(db, sql: "SELECT sqlite_version()") }) ?? "unknown"
    }
}

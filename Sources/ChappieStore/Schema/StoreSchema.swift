/// The database schema chappie's store uses, from the SQL files in `migrations/`.
public enum StoreSchema {
    /// One migration: an id such as `0001_initial` and the SQL it runs.
    public struct Migration: Sendable, Equatable {
        /// The file name without `.sql`; GRDB records it once applied.
        public let id: String
        /// The SQL statements.
        public let sql: String
    }
}

/// One migration of a store's schema: an id such as `0001_initial` and the SQL it runs. The lists
/// (``sqlite``, ``postgres``) are generated from `migrations/` by `scripts/embed-migrations.sh`.
public struct StoreMigration: Sendable, Equatable {
    /// The file name without `.sql`; GRDB records it once applied.
    public let id: String
    /// The SQL statements.
    public let sql: String
}

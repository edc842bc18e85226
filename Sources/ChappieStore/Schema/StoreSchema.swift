public import ChappieStoreFormat

/// The database schema chappie's store uses, from the SQL files in `migrations/`
/// (``StoreMigration``, in the Foundation-free `ChappieStoreFormat` the front binary reads too).
public enum StoreSchema {
    /// One migration: an id such as `0001_initial` and the SQL it runs.
    public typealias Migration = StoreMigration

    /// Every SQLite migration, in order.
    public static var migrations: [Migration] { StoreMigration.sqlite }

    /// Every migration of the team pool's PostgreSQL schema, in order.
    public static var postgresMigrations: [Migration] { StoreMigration.postgres }
}

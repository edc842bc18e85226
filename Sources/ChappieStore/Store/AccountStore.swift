/// The store of accounts: every role a backend plays, composed so a call site names one type.
/// Each role is a protocol of its own (``AccountDirectory``, ``SealedCredentials``, ``KeyCustody``,
/// ``UsageLog``, ``LeaseBook``, ``AuditLog``, ``StoreSettings``); code that needs one role takes
/// that role. Every operation is asynchronous, so a backend never blocks the cooperative pool.
/// ``SQLiteAccountStore`` (one machine) and `PostgresAccountStore` (the team pool) implement it, and
/// `Tests/ChappieStoreTests/Contract` is the suite a new backend must pass.
///
/// Credentials are sealed with the store's key and bound to the account's ``Account/uuid`` and the
/// key id: a blob moved to another account, or sealed by another key, does not open. Every change
/// is one transaction, and its audit entry is written in the same transaction.
///
/// ```swift
/// let store: any AccountStore = try await StoreOpener.open(options).store
/// for account in try await store.accounts() { print(account.name) }
/// ```
package protocol AccountStore: AccountDirectory, SealedCredentials, KeyCustody, UsageLog, LeaseBook, AuditLog, StoreSettings {
    /// The local data directory (locks, recovery files, the default key file).
    var location: StoreLocation { get }
}

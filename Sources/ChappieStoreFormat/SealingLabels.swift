/// The associated data that binds what the store seals, and the key check's known plaintext: part
/// of the store's format, which both binaries read (a sealed blob opens only under the same text).
public enum SealingLabels {
    /// The key check's associated data.
    public static let keyCheck = "chappie/key-check/v1"
    /// The key check's plaintext: opening it proves the key before anything is written.
    public static let keyCheckPlaintext = "chappie key check v1"

    /// A credential's associated data, bound to its account's UUID (lowercase) and the key.
    public static func credential(accountUUID: String, keyID: String) -> String {
        "chappie/credential/v2 account=\(accountUUID) key=\(keyID)"
    }

    /// A credential's associated data in stores before migration 0004: bound to the account's row id.
    public static func credential(accountRowID: Int64, keyID: String) -> String {
        "chappie/credential/v1 account=\(accountRowID) key=\(keyID)"
    }
}

import ChappieStoreFormat
import ChappieSystem
import CSQLite
import CSodium
import ChappieText
import Glibc

/// A token as `chappie token` prints it.
public struct FrontToken: Equatable, Sendable {
    /// The account's name.
    public var name: String
    /// The access token.
    public var accessToken: String
    /// The access token's `exp`, in seconds since 1970, whole.
    public var expiresAt: Int64?
    /// The ChatGPT account id, when known.
    public var chatgptAccountID: String?
    /// Whether the account is a FedRAMP one.
    public var fedramp: Bool
    /// A warning to print first (the daemon's, when it could not refresh).
    public var warning: String?
}

/// Reads a valid access token from the local store, read-only, when nothing is to be done but
/// read: the account is in order and its token does not expire within the margin. Every other case
/// is `nil`, and the full binary takes the line and does what it always did (refresh, adopt a Codex
/// login's newer tokens, explain an error).
public struct StoredTokenReader {
    let directory: DataDirectory
    let request: FrontRequest.TokenRequest
    let now: Double

    /// A reader for `request` in `directory`, deciding expiry against `now` (seconds since 1970).
    public init(directory: DataDirectory, request: FrontRequest.TokenRequest, now: Double) {
        self.directory = directory
        self.request = request
        self.now = now
    }

    /// The token, or `nil` when the full binary must answer.
    public func read() -> FrontToken? {
        guard let store = OpenedStore(directory) else { return nil }
        let columns = "id, name, chatgpt_account_id, is_fedramp, status, codex_home, uuid"
        let rows: [[ReadOnlyDatabase.Value]]?
        if let name = request.name {
            rows = store.database.rows("SELECT \(columns) FROM accounts WHERE name = ?", [.text(name)])
        } else if let active = store.activeID {
            rows = store.database.rows("SELECT \(columns) FROM accounts WHERE id = ?", [.integer(active)])
        } else {
            return nil
        }
        // No such account, or no active one: the full binary says so in its words.
        guard let account = rows?.first, let id = account[0].integer, let name = account[1].text, FrontRequest.isAccountName(name),
            let status = account[4].text, status == "ok" || status == "disabled",
            let uuid = account[6].text, UUIDText.isUUID(uuid, lowercaseOnly: true)
        else { return nil }
        guard let accountID = account[2].optionalText, let fedramp = account[3].integer, fedramp == 0 || fedramp == 1 else { return nil }

        // Moving to a pool, or its credentials sealed otherwise than the key and the account's UUID.
        guard store.database.rows("SELECT 1 FROM pool_moves WHERE account_id = ?", [.integer(id)])?.isEmpty == true,
            let sealed = store.database.rows(
                "SELECT key_id, nonce, ciphertext, binding FROM sealed_credentials WHERE account_id = ?", [.integer(id)])?.first,
            var plaintext = store.credentials(sealed, uuid: uuid)
        else { return nil }
        defer { sodium_memzero(&plaintext, plaintext.count) }
        guard let credentials = JSONValue.parse(plaintext), let accessToken = credentials["access_token"]?.string,
            let refreshToken = credentials["refresh_token"]?.string, credentials["id_token"]?.string != nil
        else { return nil }

        // A Codex home that may hold newer tokens: the full binary compares and adopts.
        switch account[5] {
        case .null: break
        case .text(let codexHome): guard !CodexLogin(home: codexHome).mayHoldOtherTokens(than: refreshToken) else { return nil }
        default: return nil
        }
        return finish(name: name, accessToken: accessToken, accountID: accountID, fedramp: fedramp == 1)
    }

    /// The token, unless it expires within the margin or says no expiry (then it is refreshed).
    private func finish(name: String, accessToken: String, accountID: String?, fedramp: Bool) -> FrontToken? {
        guard let expiry = AccessTokenClaims.expiry(of: accessToken), Double(expiry) - now > Double(request.marginSeconds) else { return nil }
        return FrontToken(name: name, accessToken: accessToken, expiresAt: expiry, chatgptAccountID: accountID, fedramp: fedramp, warning: nil)
    }
}

/// The local store opened read-only with its key, when the front binary may read it as it is:
/// set up, at the schema it knows, sealed with the key file's key, no rotation, reseal, recovery or
/// move in progress. Every other store is the full binary's (`nil`), which fixes modes, makes
/// missing files, migrates, finishes what was interrupted and explains errors
/// (docs/architecture.md, "Two binaries").
final class OpenedStore {
    /// The migrations of the schema this reader knows: the ones the full binary applies, from the
    /// same generated list; a store with any other set is the full binary's.
    static var schemaMigrations: [String] { StoreMigration.sqlite.map(\.id) }

    let database: ReadOnlyDatabase
    private var key: [UInt8]
    let keyID: String
    /// The active account's row id, when one is set.
    let activeID: Int64?

    init?(_ directory: DataDirectory) {
        let file = directory.path + "/chappie.sqlite"
        guard directory.isPrivateDirectory(directory.path), directory.isPrivateFile(file), !directory.exists(directory.path + "/store-url"),
            // SQLite's side files, when there, are files of their own (no link, directory or FIFO,
            // which the full binary's open refuses).
            ["-wal", "-shm", "-journal"].allSatisfy({ directory.isRegularFileOrAbsent(file + $0) }),
            // The full binary's open needs to write all of them (and makes them writable when not).
            ["", "-wal", "-shm"].allSatisfy({ !directory.exists(file + $0) || access(file + $0, W_OK) == 0 }),
            !directory.exists(directory.keyFile + ".new"), !directory.hasPendingRecovery(), !directory.hasTemporaries(),
            var key = Self.readKey(directory)
        else { return nil }
        guard let database = ReadOnlyDatabase(path: file),
            let migrations = database.rows("SELECT identifier FROM grdb_migrations ORDER BY identifier"),
            migrations.map({ $0.first?.text }) == Self.schemaMigrations,
            let settings = database.rows(
                "SELECT key, value FROM settings WHERE key IN ('key_id', 'key_check', 'passphrase_kdf', 'pending_key_id', 'row_bound_credentials', 'active_account')"
            )
        else {
            sodium_memzero(&key, key.count)
            return nil
        }
        var setting: [String: [UInt8]] = [:]
        for row in settings {
            // GRDB reads an integer setting as its decimal digits.
            if let name = row[0].text, let value = row[1].bytes ?? row[1].integer.map({ Array(String($0).utf8) }) { setting[name] = value }
        }
        // A passphrase store, a rotation or a reseal in progress: the full binary's.
        guard setting["passphrase_kdf"] == nil, setting["pending_key_id"] == nil, setting["row_bound_credentials"] == nil,
            let keyIDBytes = setting["key_id"], let keyID = String(validating: keyIDBytes, as: UTF8.self),
            keyID == Sealing.keyID(key), let check = setting["key_check"],
            Sealing.open(check, associatedData: SealingLabels.keyCheck, key: key) == Array(SealingLabels.keyCheckPlaintext.utf8)
        else {
            sodium_memzero(&key, key.count)
            return nil
        }
        // An active account named otherwise than by its row id is the full binary's to read.
        let active = setting["active_account"].map { String(validating: $0, as: UTF8.self).flatMap { Int64($0) } }
        guard active != .some(nil) else {
            sodium_memzero(&key, key.count)
            return nil
        }
        self.database = database
        self.key = key
        self.keyID = keyID
        activeID = active ?? nil
    }

    deinit {
        sodium_memzero(&key, key.count)
    }

    /// Whether any account is moving to a team pool (its credentials are the full binary's to explain).
    var hasMoves: Bool {
        database.rows("SELECT 1 FROM pool_moves LIMIT 1")?.isEmpty != true
    }

    /// The plaintext of an account's sealed credentials, when they are sealed as the full binary
    /// seals them now (this key, bound to the account's UUID) and open; the caller zeroes it.
    func credentials(_ sealed: [ReadOnlyDatabase.Value], uuid: String) -> [UInt8]? {
        guard sealed.count == 4, sealed[0].text == keyID, sealed[3].integer == 2, let nonce = sealed[1].bytes, let ciphertext = sealed[2].bytes
        else { return nil }
        return Sealing.open(nonce + ciphertext, associatedData: SealingLabels.credential(accountUUID: uuid, keyID: keyID), key: key)
    }

    /// The key file's key, read holding the key lock shared (as the full binary does), when the
    /// lock is free now and the file is in order.
    private static func readKey(_ directory: DataDirectory) -> [UInt8]? {
        let lockPath = directory.path + "/locks/key.lock"
        guard directory.isPrivateFile(lockPath) else { return nil }
        let lock = open(lockPath, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard lock >= 0 else { return nil }
        defer { close(lock) }
        guard flock(lock, LOCK_SH | LOCK_NB) == 0 else { return nil }
        defer { flock(lock, LOCK_UN) }
        guard directory.isPrivateFile(directory.keyFile), var contents = DataDirectory.contents(of: directory.keyFile, limit: 4096) else {
            return nil
        }
        defer { sodium_memzero(&contents, contents.count) }
        if contents.count == 32 { return contents }
        while let last = contents.last, last == 0x0A || last == 0x0D || last == 0x20 { contents.removeLast() }
        return Sealing.base64Decoded(contents, length: 32)
    }
}

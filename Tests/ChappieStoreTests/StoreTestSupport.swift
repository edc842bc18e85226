import ChappieCore
import ChappieStore
import ChappieTestSupport
import ChappieVault
import Foundation
import GRDB

/// A store in a fresh temporary directory.
struct TestStore {
    let location: StoreLocation
    let key: SecretKey
    let store: SQLiteAccountStore

    init(key: SecretKey = .generate()) throws {
        location = StoreLocation(directory: try TestTokens.temporaryDirectory("chappie-store"))
        self.key = key
        store = try StoreDatabase.open(at: location).unlock(with: key)
    }

    var databaseFile: URL { StoreDatabase.fileURL(in: location) }

    /// Saves an account whose tokens all contain `marker`.
    @discardableResult
    func add(_ email: String, accountID: String = UUID().uuidString.lowercased(), userID: String? = nil, marker: String, name: String? = nil)
        async throws -> Account
    {
        // The user id is stored in clear, so it must not carry the marker the raw-bytes scan looks for.
        let user = userID ?? "user-\(UUID().uuidString.prefix(8))"
        let info = ChappieAccountInfo(email: email, userID: user, accountID: accountID, plan: .plus)
        let credentials = Credentials(
            idToken: TestTokens.idToken(email: email, accountID: accountID, userID: user) + ".\(marker)",
            accessToken: "access-\(marker)", refreshToken: "refresh-\(marker)")
        return try await store.save(
            info: info, credentials: credentials, accessTokenExpiresAt: Date().addingTimeInterval(3600), refreshedAt: Date(),
            name: try name.map { try AccountName($0) }, event: .imported
        ).account
    }

    /// Every byte of the database and its WAL and shared-memory files.
    func rawBytes() -> Data {
        ["", "-wal", "-shm"].reduce(into: Data()) { bytes, suffix in
            bytes += FileManager.default.contents(atPath: databaseFile.path + suffix) ?? Data()
        }
    }

    /// Every row of every table, to compare content before and after.
    func contents() throws -> String {
        try DatabaseQueue(path: databaseFile.path).read { db in
            try ["accounts", "sealed_credentials", "events", "settings", "usage_samples", "grdb_migrations"].map { table in
                try Row.fetchAll(db, sql: "SELECT * FROM \(table) ORDER BY 1").description
            }.joined(separator: "\n")
        }
    }

    func remove() {
        try? FileManager.default.removeItem(at: location.directory)
    }
}

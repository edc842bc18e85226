import ChappieCore
import ChappiePool
import ChappieStore
import ChappieTestSupport
import ChappieVault
import Foundation
import Testing

/// The backends every role of ``AccountStore`` is held to. A third backend joins by adding a case
/// here and opening in ``open(home:)``: the contract suites then run against it unchanged.
enum StoreBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// This machine's SQLite database.
    case sqlite
    /// The team pool on a real PostgreSQL server (Debian's, started once for the test process).
    case postgres

    var testDescription: String { rawValue }

    /// A fresh, empty store of this backend, opened as chappie opens one (``StoreOpener``), with a
    /// data directory of its own; `body` may open the same store again (another process's view).
    func withStore<T>(_ body: (ContractStore) async throws -> T) async throws -> T {
        let home = try TestTokens.temporaryDirectory("chappie-contract")
        defer { try? FileManager.default.removeItem(at: home) }
        let address: String? = self == .postgres ? try await SharedPostgres.database().url : nil
        let store = ContractStore(backend: self, home: home, address: address)
        return try await body(store)
    }
}

/// One store under contract: open it (again) with ``open()``, and the helpers the suites share.
struct ContractStore: Sendable {
    let backend: StoreBackend
    let home: URL
    let address: String?

    /// The machine name the store is opened with.
    static let machine = "contract-a"

    var options: StoreOptions {
        var options = StoreOptions(home: home.path, environment: [:], storeURL: address ?? "", machine: Self.machine)
        options.poolBackend = TeamPool()
        return options
    }

    /// Opens the store; every call is another open of the same store, as another process makes.
    func open() async throws -> any AccountStore {
        try await StoreOpener.open(options).store
    }

    /// The name usage by machine reports for this store's readings.
    var machineName: String {
        backend == .postgres ? Self.machine : StoreOptions(environment: [:]).machineName
    }
}

/// Test data: an identity and its tokens, each carrying `marker`.
struct Identity: Sendable {
    let info: ChappieAccountInfo
    let credentials: Credentials

    init(_ email: String, marker: String, accountID: String = UUID().uuidString.lowercased(), userID: String = "user-\(UUID().uuidString.prefix(8))")
    {
        info = ChappieAccountInfo(email: email, userID: userID, accountID: accountID, plan: .plus)
        credentials = Credentials(
            idToken: TestTokens.idToken(email: email, accountID: accountID, userID: userID), accessToken: "access-\(marker)",
            refreshToken: "refresh-\(marker)")
    }

    /// The same identity with new tokens.
    func rotated(_ marker: String) -> Credentials {
        Credentials(idToken: credentials.idToken, accessToken: "access-\(marker)", refreshToken: "refresh-\(marker)")
    }
}

extension AccountStore {
    /// Saves an identity, as sign-in does.
    @discardableResult
    func add(_ identity: Identity, name: String? = nil, expiresAt: Date? = Date(timeIntervalSinceNow: 3600)) async throws -> Account {
        try await save(
            info: identity.info, credentials: identity.credentials, accessTokenExpiresAt: expiresAt, refreshedAt: Date(),
            name: try name.map { try AccountName($0) }, event: .signedIn
        ).account
    }
}

/// Whether `body` throws a ``StoreError`` with `code`.
func expectStoreError<T>(_ code: StoreError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T) async {
    do {
        _ = try await body()
        Issue.record("expected a store error \(code), got none", sourceLocation: sourceLocation)
    } catch let error as StoreError {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a store error \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

/// An account name the test knows is valid.
func named(_ text: String) -> AccountName {
    try! AccountName(text)
}

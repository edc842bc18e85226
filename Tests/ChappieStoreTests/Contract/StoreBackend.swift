import ChappieCore
import ChappiePool
import ChappieStore
import ChappieTestSupport
import ChappieVault
import Foundation
import Testing

/// The backends every role of ``AccountStore`` is held to. A third backend joins by adding a case,
/// saying whether machines share it (``sharedByMachines``) and how it opens (``open(home:address:machine:)``):
/// the contract suites then run against it unchanged.
enum StoreBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// This machine's SQLite database.
    case sqlite
    /// The team pool on a real PostgreSQL server (Debian's, started once for the test process).
    case postgres

    var testDescription: String { rawValue }

    /// Whether several machines share the store: then the key can change where this process cannot
    /// follow, and a poll one machine claimed is left out for the others. A new backend says which
    /// it is here; the suites hold it to the promises of its kind.
    var sharedByMachines: Bool {
        switch self {
        case .sqlite: false
        case .postgres: true
        }
    }

    /// Opens this backend's store in `home` (at `address`, for a shared one) as machine `machine`.
    func open(home: URL, address: String?, machine: String) async throws -> any AccountStore {
        switch self {
        case .sqlite:
            return try await StoreOpener.open(StoreOptions(home: home.path, environment: [:], storeURL: "")).store
        case .postgres:
            var options = StoreOptions(home: home.path, environment: [:], storeURL: address, machine: machine)
            // In-process, beside every other test of the suite, an operation can wait its turn for long.
            options.poolBackend = TeamPool(deadline: .seconds(300))
            return try await StoreOpener.open(options).store
        }
    }

    /// A fresh, empty store of this backend, opened as chappie opens one (``StoreOpener``), with a
    /// data directory of its own; `body` may open the same store again (another process's view).
    func withStore<T>(_ body: (ContractStore) async throws -> T) async throws -> T {
        // The pool's tests run in this process, beside CPU-bound ones, on a cooperative pool as wide
        // as the machine has cores: a few at a time keep each open within the pool's deadline.
        if self == .postgres { await Self.postgresSlots.wait() }
        defer { if self == .postgres { Task { await Self.postgresSlots.signal() } } }
        let home = try TestTokens.temporaryDirectory("chappie-contract")
        defer { try? FileManager.default.removeItem(at: home) }
        let address: String? = self == .postgres ? try await SharedPostgres.database().url : nil
        let store = ContractStore(backend: self, home: home, address: address)
        return try await body(store)
    }
}

/// A counting semaphore: at most `limit` holders at once, the rest waiting in order.
actor Slots {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ limit: Int) { free = limit }

    func wait() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func signal() {
        if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
    }
}

extension StoreBackend {
    static let postgresSlots = Slots(3)
}

/// One store under contract: open it (again) with ``open()``, and the helpers the suites share.
struct ContractStore: Sendable {
    let backend: StoreBackend
    let home: URL
    let address: String?

    /// The machine name the store is opened with.
    static let machine = "contract-a"

    /// Opens the store; every call is another open of the same store, as another process makes.
    /// With `machine`, a shared store is opened as another machine (its own data directory).
    func open(machine: String = Self.machine) async throws -> any AccountStore {
        guard machine != Self.machine else { return try await backend.open(home: home, address: address, machine: machine) }
        let other = home.appendingPathComponent(machine)
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // The store's key, which every machine of a shared store must have.
        let key = home.appendingPathComponent("chappie.key")
        if !FileManager.default.fileExists(atPath: other.appendingPathComponent("chappie.key").path) {
            try FileManager.default.copyItem(at: key, to: other.appendingPathComponent("chappie.key"))
        }
        return try await backend.sharedByMachines
            ? backend.open(home: other, address: address, machine: machine) : backend.open(home: home, address: address, machine: machine)
    }

    /// The name usage by machine reports for this store's readings: the machine's on a shared
    /// store, the host's on one machine's.
    var machineName: String {
        backend.sharedByMachines ? Self.machine : StoreOptions(environment: [:]).machineName
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

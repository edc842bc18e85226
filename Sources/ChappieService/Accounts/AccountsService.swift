public import ChappieCore
import Chappie
public import ChappieStore
public import Foundation

/// The account operations behind `chappie accounts …`.
///
/// ```swift
/// let service = AccountsService(store: opened.store)
/// let (account, created) = try service.importCodexAuth(from: nil, name: nil)
/// ```
public struct AccountsService: Sendable {
    /// An account with whether its sealed credentials open.
    public struct Summary: Sendable {
        /// The account.
        public var account: Account
        /// `nil` when the credentials open; else why not.
        public var credentialProblem: String?

        /// Creates a summary.
        public init(account: Account, credentialProblem: String?) {
            self.account = account
            self.credentialProblem = credentialProblem
        }
    }

    /// What `switch` did.
    public struct SwitchOutcome: Sendable {
        /// The now active account.
        public var account: Account
        /// The `auth.json` written for Codex, if any.
        public var codexAuthFile: URL?
    }

    /// The store.
    public let store: AccountStore
    /// The environment (`CODEX_HOME`, `HOME`).
    public let environment: [String: String]

    /// Creates the service.
    public init(store: AccountStore, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.store = store
        self.environment = environment
    }

    /// Every account, each with a check that its credentials open (cheap: one AEAD open each).
    public func list() throws(StoreError) -> [Summary] {
        let accounts = try store.accounts()
        let problems = try store.credentialProblems(of: accounts)
        return accounts.map { Summary(account: $0, credentialProblem: problems[$0.id]) }
    }

    /// One account, with a check that its credentials open.
    public func show(_ name: AccountName) throws(StoreError) -> Summary {
        summary(try store.account(named: name))
    }

    private func summary(_ account: Account) -> Summary {
        do {
            _ = try store.credentials(for: account)
            return Summary(account: account, credentialProblem: nil)
        } catch {
            return Summary(account: account, credentialProblem: error.message)
        }
    }

    /// Imports a Codex `auth.json`: the same ChatGPT account again updates its tokens.
    ///
    /// - Parameters:
    ///   - path: The file; by default `$CODEX_HOME/auth.json`, else `~/.codex/auth.json`.
    ///   - name: The name to give the account.
    /// - Throws: ``ServiceError`` for an unusable file (nothing stored), ``StoreError`` otherwise.
    public func importCodexAuth(from path: URL?, name: AccountName?) throws -> (account: Account, created: Bool, file: URL) {
        let file = path ?? CodexAuthFile.defaultHome(environment: environment).appendingPathComponent("auth.json")
        let auth = try CodexAuthFile.read(file)
        let result = try store.save(
            info: auth.info, credentials: auth.credentials, accessTokenExpiresAt: auth.accessTokenExpiresAt,
            refreshedAt: auth.lastRefresh, name: name, event: "imported")
        return (result.account, result.created, file)
    }

    /// Makes an account the active one and, with a Codex home (given, or the default setting),
    /// moves that home's ownership to it and writes its `auth.json` there so the Codex CLI uses it.
    ///
    /// Holds the accounts' locks (the new and the previous owner, by row id) and then the home's
    /// `auth.json.lock`, the refresher's order, so no refresh writes the file meanwhile. Tokens Codex
    /// rotated in the file are first adopted for the account they belong to; a file holding a login
    /// chappie does not know (or no ChatGPT login at all) is not replaced unless `force`.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` for a home holding an unknown login without
    ///   `force`; ``StoreError`` when the account's credentials do not open (nothing changed).
    public func switchTo(_ name: AccountName, codexHome: URL?, force: Bool = false) async throws -> SwitchOutcome {
        let account = try store.account(named: name)
        let configured = try store.defaultCodexHome().map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) }
        guard let home = (codexHome ?? configured)?.standardizedFileURL else {
            return SwitchOutcome(account: try store.activate(name), codexAuthFile: nil)
        }
        let mirror = CodexMirror(home: home)
        // Every account this may write: the new owner, the previous one, and whoever the file holds.
        let previous = try store.codexHomeOwner(home.path)
        let holder = (try? CodexAuthFile.read(mirror.file)).flatMap { try? store.account(matching: $0.info) }
        var involved: [Int64: Account] = [:]
        for candidate in [account, previous, holder].compactMap({ $0 }) { involved[candidate.id] = candidate }
        var locks: [FileLock] = []
        for id in involved.keys.sorted() { locks.append(try await FileLock.acquire(store.lockURL(for: involved[id]!))) }
        locks.append(try await FileLock.acquire(mirror.lockURL))
        defer { withExtendedLifetime(locks) {} }

        try adoptFromCodexHome(mirror, force: force)
        // Open the credentials first (after any adoption): a damaged account must not become active half-way.
        let current = try store.account(id: account.id)
        let credentials = try store.credentials(for: current)
        let written = try CodexAuthFile.write(credentials, accountID: current.info.accountID, to: home)
        let active = try store.activate(name, owningCodexHome: home.path, detail: "codex home \(home.path)")
        return SwitchOutcome(account: active, codexAuthFile: written)
    }

    /// Before `switch` replaces a Codex home's `auth.json`: tokens Codex rotated there are taken
    /// for the account they belong to; a login chappie does not know stops the switch unless `force`.
    private func adoptFromCodexHome(_ mirror: CodexMirror, force: Bool) throws {
        guard FileManager.default.fileExists(atPath: mirror.file.path) else { return }
        let held: CodexAuthFile
        do {
            held = try CodexAuthFile.read(mirror.file)
        } catch {
            if force { return }
            throw ServiceError(
                .invalidInput,
                "\(mirror.file.path) does not hold a ChatGPT login chappie can read (\(error)); pass --force to replace it")
        }
        guard let holder = try store.account(matching: held.info), held.belongs(to: holder) else {
            if force { return }
            throw ServiceError(
                .invalidInput,
                "\(mirror.file.path) holds a login chappie does not know (\(held.info.email ?? "no e-mail")); import it first with chappie accounts import --from \(mirror.file.path), or pass --force to replace it")
        }
        let stored = try store.credentials(for: holder)
        if let newer = mirror.newerCredentials(than: stored, for: holder) {
            _ = try store.updateCredentials(
                of: holder, to: newer, accessTokenExpiresAt: held.accessTokenExpiresAt, refreshedAt: held.lastRefresh ?? Date(),
                event: "adopted", detail: "tokens the Codex CLI refreshed in \(mirror.home.path), taken before switching")
        }
    }
}

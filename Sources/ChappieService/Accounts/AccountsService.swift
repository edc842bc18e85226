public import ChappieCore
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
    /// writes its `auth.json` there so the Codex CLI uses it.
    public func switchTo(_ name: AccountName, codexHome: URL?) throws -> SwitchOutcome {
        let account = try store.account(named: name)
        let home = try codexHome ?? store.defaultCodexHome().map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) }
        var written: URL?
        if let home {
            // Open the credentials first: a damaged account must not become active half-way.
            let credentials = try store.credentials(for: account)
            written = try CodexAuthFile.write(credentials, accountID: account.info.accountID, to: home)
            try store.setCodexHome(home.path, for: name)
        }
        let active = try store.activate(name, detail: written.map { "codex home \($0.deletingLastPathComponent().path)" } ?? "")
        return SwitchOutcome(account: active, codexAuthFile: written)
    }
}

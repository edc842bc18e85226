public import ChappieCore
package import Chappie
public import ChappieStore
import ChappieVault
public import Foundation

/// The account operations behind `chappie accounts …`.
///
/// ```swift
/// let service = AccountsService(store: store)
/// let imported = try await service.importCodexAuth(from: nil, name: nil)
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
        /// Where the Codex home came from when no `codex-home` was configured (`$CODEX_HOME` or
        /// `~/.codex`): it is now the `codex-home` setting.
        public var chosenCodexHome: String?
        /// The login the home held that chappie did not know, imported before switching.
        public var imported: Account?
        /// Why no Codex home was written when none was configured: none was found, or the one found
        /// may not be written (``SafePath``). The account is active all the same.
        public var codexHomeSkipped: String?
        /// The account that owned the Codex home before, when it was another one (`nil` also when
        /// none did).
        public var previousOwner: AccountName?
        /// The Codex processes running in that home (``RunningCodex``), when it changed hands: they
        /// go on as ``previousOwner`` until their next refresh, then stop and ask for a sign-in.
        public var codexProcesses: [Int32] = []
    }

    /// What `import` did.
    public struct ImportOutcome: Sendable {
        /// The account.
        public var account: Account
        /// Whether it is new.
        public var created: Bool
        /// The file read.
        public var file: URL
        /// The file held the tokens chappie has already: nothing changed.
        public var unchanged = false
        /// What the renewal did to the Codex home the account owns, if it owns one.
        public var codexHome: CodexHomeRenewal?
    }

    /// Whether `switch` writes a Codex home's `auth.json`.
    public enum CodexHomeChoice: Sendable, Equatable {
        /// This one.
        case at(URL)
        /// The `codex-home` setting; else `$CODEX_HOME`, else `~/.codex` if it exists, then stored
        /// as the setting so that the daemon and `exec` agree; else none.
        case standard
        /// None (`--no-codex-home`).
        case noHome
    }

    /// The store.
    package let store: any AccountStore
    /// The environment (`CODEX_HOME`, `HOME`).
    public let environment: [String: String]

    /// Checks the issuer's signature on tokens Codex left in a home before they are adopted.
    let signatures: TokenSignatures

    /// Creates the service.
    package init(store: any AccountStore, signatures: TokenSignatures, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.store = store
        self.signatures = signatures
        self.environment = environment
    }

    /// Every account, each with a check that its credentials open (cheap: one AEAD open each).
    public func list() async throws(StoreError) -> [Summary] {
        let accounts = try await store.accounts()
        let problems = try await store.credentialProblems(of: accounts)
        return accounts.map { Summary(account: $0, credentialProblem: problems[$0.id]) }
    }

    /// The local store's account names, for shell completion: read without the key, so a
    /// passphrase store never prompts (``AccountNames``); `home` as `--home` gives it.
    public static func namesWithoutUnlocking(home: String?) -> [String] {
        AccountNames.read(in: StoreLocation.resolve(home: home))
    }

    /// The local store's accounts and newest readings, read without the key and without writing
    /// (``UnsealedView``): `nil` when there is no local database, or it cannot be read at once.
    public static func unsealedView(home: String?) -> (accounts: [Account], latest: [Int64: UsageSample])? {
        UnsealedView.read(in: StoreLocation.resolve(home: home))
    }

    /// Every account, by name, without opening their credentials.
    public func all() async throws -> [Account] {
        try await store.accounts()
    }

    /// The active account, if one is set.
    public func active() async throws -> Account? {
        try await store.activeAccount()
    }

    /// The rule for a reserve, for messages.
    public static let reserveRule = "a reserve is a percentage above 0 and at most 100, or none"

    /// A reserve as people type it: a percentage above 0 and at most 100, or `none` (`nil`).
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` stating ``reserveRule``.
    public static func reserve(parsing text: String) throws(ServiceError) -> Double? {
        if text.lowercased() == "none" { return nil }
        guard let value = Double(text), isValidReserve(value) else { throw ServiceError(.invalidInput, reserveRule) }
        return value
    }

    private static func isValidReserve(_ percent: Double) -> Bool { percent > 0 && percent <= 100 }

    /// Sets (or with `nil` clears) an account's reserve: at or above that used percent, `--best`
    /// and auto-switch count it as full.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` for a percentage outside ``reserveRule``.
    public func setReserve(_ percent: Double?, for name: AccountName) async throws -> Account {
        if let percent, !Self.isValidReserve(percent) { throw ServiceError(.invalidInput, Self.reserveRule) }
        return try await store.setReserve(percent, for: name)
    }

    /// Sets how many leases may hold an account at once (`accounts set NAME --max-leases K`, 1 to 1000).
    public func setMaxLeases(_ count: Int, for name: AccountName) async throws -> Account {
        guard (1...1000).contains(count) else { throw ServiceError(.invalidInput, "--max-leases must be a whole number from 1 to 1000") }
        return try await store.setMaxLeases(count, for: name)
    }

    /// Sets whether auto-switch, `--best`, failover and leases may choose an account by themselves,
    /// and its priority among those they may (`nil`: unchanged).
    public func setChoice(autoSwitch: Bool?, priority: Int?, for name: AccountName) async throws -> Account {
        if let priority, !Account.priorities.contains(priority) {
            throw ServiceError(.invalidInput, "--priority is a whole number from -1000 to 1000")
        }
        return try await store.setChoice(autoSwitch: autoSwitch, priority: priority, for: name)
    }

    /// Renames an account. Throws ``StoreError`` `.notFound` or `.nameTaken`.
    public func rename(_ name: AccountName, to newName: AccountName) async throws {
        try await store.rename(name, to: newName)
    }

    /// The account with this name.
    public func account(named name: AccountName) async throws -> Account {
        try await store.account(named: name)
    }

    /// The account with this name, or `nil` when there is none (other store failures throw).
    public func existing(named name: AccountName) async throws -> Account? {
        do {
            return try await store.account(named: name)
        } catch let error as StoreError where error.code == .notFound {
            return nil
        }
    }

    /// Removes an account, its sealed credentials, its usage history, its login in the Codex home
    /// it owns and the private Codex home `chappie exec` gave it (tokens must not outlive the
    /// account there); the audit log keeps it, with `note` and the login (``RemovedLogin``).
    ///
    /// - Returns: The `auth.json` removed from the Codex home the account owned, if any: left there,
    ///   Codex would go on with a login chappie no longer refreshes, or that was just revoked.
    @discardableResult
    public func remove(_ name: AccountName, note: String = "") async throws -> URL? {
        let account = try await store.account(named: name)
        let codexLogin = try await store.withRefreshLock(on: account) { () async throws -> URL? in
            let current = try await store.account(id: account.id)
            let mirror = current.codexHome.map { CodexMirror(home: URL(fileURLWithPath: $0)) }
            try mirror?.refuseWhileInUse(by: current.name, doing: "remove it")
            var lock: FileLock?
            if let mirror, mirror.refusal() == nil { lock = try await FileLock.acquire(mirror.lockURL) }
            defer { withExtendedLifetime(lock) {} }
            try await store.remove(name, note: note)
            guard let mirror, lock != nil, let held = try? CodexAuthFile.read(mirror.file), held.belongs(to: current) else { return nil }
            unlink(mirror.file.path)
            PrivateFile.syncDirectory(mirror.home)
            return mirror.file
        }
        let home = store.privateCodexHome(of: account)
        if FileManager.default.fileExists(atPath: home.path) {
            do {
                try FileManager.default.removeItem(at: home)
            } catch {
                throw ServiceError(
                    .invalidInput,
                    "\(name) was removed, but its private Codex home \(home.path) was not: \(error.localizedDescription); remove it by hand")
            }
        }
        return codexLogin
    }

    /// One account, with a check that its credentials open.
    public func show(_ name: AccountName) async throws(StoreError) -> Summary {
        await summary(try await store.account(named: name))
    }

    private func summary(_ account: Account) async -> Summary {
        do {
            _ = try await store.credentials(for: account)
            return Summary(account: account, credentialProblem: nil)
        } catch {
            return Summary(account: account, credentialProblem: error.message)
        }
    }

    /// Imports a Codex `auth.json`: the same ChatGPT account again updates its tokens, under the
    /// account's lock, and only with newer tokens than the stored ones (an old copy's refresh token
    /// was already redeemed: storing it would lose the account) unless `force`.
    ///
    /// - Parameters:
    ///   - path: The file; by default `$CODEX_HOME/auth.json`, else `~/.codex/auth.json`.
    ///   - name: The name to give the account.
    ///   - force: Store the file's tokens even when they are older than the stored ones.
    /// - Throws: ``ServiceError`` for an unusable file or older tokens (nothing stored),
    ///   ``StoreError`` otherwise.
    public func importCodexAuth(
        from path: URL?, name: AccountName?, force: Bool = false, renaming: Bool = false
    ) async throws -> ImportOutcome {
        let file = path ?? CodexAuthFile.defaultHome(environment: environment).appendingPathComponent("auth.json")
        let auth = try CodexAuthFile.read(file)
        let save = { () async throws -> (account: Account, created: Bool) in
            try await store.save(
                info: auth.info, credentials: auth.credentials, accessTokenExpiresAt: auth.accessTokenExpiresAt,
                refreshedAt: auth.lastRefresh, name: name, event: .imported)
        }
        guard let existing = try await store.account(matching: auth.info) else {
            let result = try await save()
            return ImportOutcome(account: (try? await store.activateIfNoneIs(result.account)) ?? result.account, created: result.created, file: file)
        }
        // The same login under another name is renamed only when asked: a silent rename would make
        // scripts that use the old name fail.
        if let name, name != existing.name, !renaming {
            throw ServiceError(
                .invalidInput,
                "\(file.path) holds the login chappie has as \(existing.name); nothing was changed. Import it without --name to update \(existing.name), or pass --rename to rename \(existing.name) to \(name)"
            )
        }
        let result = try await store.withRefreshLock(on: existing) { () async throws -> (account: Account, created: Bool)? in
            let current = try await store.account(id: existing.id)
            let stored = try? await store.credentials(for: current)
            if stored == auth.credentials, name == nil || name == current.name { return nil }
            if !force, let stored, stored.refreshToken != auth.credentials.refreshToken, !auth.isNewer(than: stored, of: current) {
                throw ServiceError(
                    .invalidInput,
                    "\(file.path) holds older tokens for \(current.name) than chappie has (their refresh token was most likely redeemed already); nothing was changed. Pass --force to import them anyway"
                )
            }
            // Renamed first, as `accounts rename` does: the audit log has the rename as its own entry.
            if let name, name != current.name { try await store.rename(current.name, to: name) }
            return try await save()
        }
        guard let result else { return ImportOutcome(account: existing, created: false, file: file, unchanged: true) }
        let renewal = await CodexMirror.publishRenewal(of: result.account, in: store, signatures: signatures, from: file)
        return ImportOutcome(account: result.account, created: result.created, file: file, codexHome: renewal)
    }

    /// Makes an account the active one and, with a Codex home (given, or the default setting),
    /// moves that home's ownership to it and writes its `auth.json` there so the Codex CLI uses it.
    ///
    /// Holds the locks of every account involved (the new owner, the previous one, whoever the file
    /// holds; by row id) and then the `auth.json.lock` of each home involved (by path), the
    /// refresher's order, so no refresh writes a file meanwhile; what is involved is read again
    /// under the locks, and the switch starts over if it changed. Tokens Codex rotated in the file
    /// are first adopted for the account they belong to; a file holding a login chappie does not
    /// know (or no ChatGPT login at all) is not replaced unless `force`. An account owns one home:
    /// moved to another, it leaves the first (tokens Codex refreshed there are adopted, and that
    /// `auth.json`, which would otherwise keep a refresh token chappie is about to spend, is
    /// removed). If the database refuses the switch, the file is put back as it was.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` for a home holding an unknown login without
    ///   `force`; ``StoreError`` when the account's credentials do not open (nothing changed).
    public func switchTo(_ name: AccountName, codexHome choice: CodexHomeChoice = .standard, force: Bool = false) async throws -> SwitchOutcome {
        let account = try await store.account(named: name)
        var chosen: (home: URL, source: String)?
        let home: URL?
        switch choice {
        case .at(let url): home = url.standardizedFileURL
        case .noHome: home = nil
        case .standard:
            if let configured = try await store.defaultCodexHome() {
                home = URL(fileURLWithPath: (configured as NSString).expandingTildeInPath).standardizedFileURL
            } else {
                chosen = standardCodexHome()
                home = chosen?.home
            }
        }
        // A home only guessed that may not be written is passed over: the user asked for a switch.
        let skipped: String? =
            if case .standard = choice, home == nil, chosen == nil {
                "no Codex home was found ($CODEX_HOME is unset and there is no ~/.codex), so Codex was not pointed at \(name); pass --codex-home DIR to write one"
            } else if let chosen, let refusal = CodexMirror(home: chosen.home).refusal() {
                "\(chosen.source) (\(chosen.home.path)) was not written: \(refusal)"
            } else {
                nil
            }
        guard let home, skipped == nil || chosen == nil else {
            var outcome = SwitchOutcome(account: try await store.activate(name), codexAuthFile: nil)
            outcome.codexHomeSkipped = skipped
            return outcome
        }
        let mirror = CodexMirror(home: home)
        if let refusal = mirror.refusal() { throw ServiceError(.configuration, "\(refusal); nothing was written") }
        // Taken before this switch's own lock file exists. A switch that fails leaves no lock file it
        // made, so that a `codex login` there still reads as one on the next try.
        let touched = mirror.wasWrittenByChappie
        do {
            return try await switchLocked(name, account: account, mirror: mirror, touched: touched, force: force, chosen: chosen)
        } catch {
            if !touched { unlink(mirror.lockURL.path) }
            throw error
        }
    }

    /// ``switchTo(_:codexHome:force:)`` once the home is known: under the locks, again while the
    /// home changes hands.
    private func switchLocked(
        _ name: AccountName, account: Account, mirror: CodexMirror, touched: Bool, force: Bool, chosen: (home: URL, source: String)?
    ) async throws -> SwitchOutcome {
        let home = mirror.home
        for _ in 0..<5 {
            let involved = try await involvement(of: account, in: mirror)
            let outcome: SwitchOutcome? = try await store.withRefreshLock(onAccounts: Array(involved.accountIDs)) {
                var locks: [FileLock] = []
                for path in Set([home.path] + (involved.previousHome.map { [$0] } ?? [])).sorted() {
                    locks.append(try await FileLock.acquire(CodexMirror(home: URL(fileURLWithPath: path)).lockURL))
                }
                defer { withExtendedLifetime(locks) {} }
                guard try await involvement(of: account, in: mirror) == involved else { return nil }
                return try await switchUnderLocks(name, mirror: mirror, leaving: involved.previousHome, touched: touched, force: force)
            }
            if var outcome {
                if let chosen {
                    try await store.setDefaultCodexHome(chosen.home.path)
                    outcome.chosenCodexHome = chosen.source
                }
                return outcome
            }
        }
        throw ServiceError(.invalidInput, "\(home.path) kept changing hands while switching; try again")
    }

    /// The Codex home a user who configured none has: ``AccountStore/userCodexHome(environment:)``,
    /// `~/.codex` only when that directory exists.
    func standardCodexHome() -> (home: URL, source: String)? {
        let user = store.userCodexHome(environment: environment)
        if user.fromEnvironment { return (user.home, "$CODEX_HOME") }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: user.home.path, isDirectory: &isDirectory), isDirectory.boolValue else { return nil }
        return (user.home, "~/.codex")
    }

    /// Who and what a switch into a home touches.
    private struct Involvement: Equatable {
        var accountIDs: Set<Int64>
        /// The other home the account owns now, which it leaves.
        var previousHome: String?
    }

    private func involvement(of account: Account, in mirror: CodexMirror) async throws -> Involvement {
        let current = try await store.account(id: account.id)
        let previousOwner = try await store.codexHomeOwner(mirror.home.path)
        var holder: Account?
        if let held = try? CodexAuthFile.read(mirror.file) { holder = try? await store.account(matching: held.info) }
        return Involvement(
            accountIDs: Set([current.id, previousOwner?.id, holder?.id].compactMap { $0 }),
            previousHome: current.codexHome.flatMap { $0 == mirror.home.path ? nil : $0 })
    }

    @_optimize(none)  // Swift 6.3.1 -O crashes splitting this coroutine (CoroSplit, swifterror).
    private func switchUnderLocks(
        _ name: AccountName, mirror: CodexMirror, leaving previousHome: String?, touched: Bool, force: Bool
    ) async throws -> SwitchOutcome {
        // Even for a login this store knows: each store would redeem the refresh token the other wrote.
        if let other = mirror.otherOwner(than: store.location.directory) {
            throw ServiceError(
                .configuration,
                "\(mirror.home.path) is the Codex home of another chappie data directory, \(other); nothing was written. Switch from there (chappie --home \(other) accounts switch \(name)), or pass --codex-home DIR for a home of this data directory's own; if that data directory is no longer in use, remove \(mirror.ownerURL.path) and switch again"
            )
        }
        let left = previousHome.map { CodexMirror(home: URL(fileURLWithPath: $0)) }
        try left?.refuseWhileCodexRuns(by: name, doing: "switch it to another Codex home")
        // The home's owner until now may have a command `exec` started running there: its Codex
        // holds that account's refresh token, and would write it over this account's file.
        let owner = try await store.codexHomeOwner(mirror.home.path)
        if let owner, owner.name != name {
            try mirror.refuseWhileInUse(by: owner.name, doing: "switch \(name) into \(mirror.home.path)")
        }
        let imported = try await adoptFromCodexHome(mirror, touched: touched, force: force)
        var current = try await store.account(named: name)
        // Tokens there that are not the issuer's: --force leaves them, and the file goes below.
        if let left,
            let adopted = try await left.adoptNewer(
                into: store, for: current, stored: store.credentials(for: current), taken: "before leaving it", signatures: signatures, forcing: force
            )
        {
            current = adopted.account
        }
        // Open the credentials first (after any adoption): a damaged account must not become active half-way.
        let credentials = try await store.credentials(for: current)
        let before = FileManager.default.contents(atPath: mirror.file.path)
        let written = try CodexAuthFile.write(credentials, accountID: current.info.accountID, to: mirror.home)
        let active: Account
        do {
            active = try await store.activate(name, owningCodexHome: mirror.home.path, detail: "codex home \(mirror.home.path)")
        } catch {
            // The database still names the old owner: the file must hold what it held.
            if let before {
                try? PrivateFile.write(SecretBytes(copying: before), to: mirror.file)
            } else {
                unlink(mirror.file.path)
            }
            throw error
        }
        try? mirror.markOwner(store.location.directory)
        if let left, let held = try? CodexAuthFile.read(left.file), held.belongs(to: active) {
            unlink(left.file.path)
            PrivateFile.syncDirectory(left.home)
            try? await store.recordEvent(
                .codexHomeLeft, account: active, detail: "\(left.file.path) removed: \(active.name) now owns \(mirror.home.path)")
        }
        var outcome = SwitchOutcome(account: active, codexAuthFile: written, imported: imported)
        if owner?.id != active.id {
            outcome.previousOwner = owner?.name
            outcome.codexProcesses = RunningCodex.processes(in: mirror.home)
        }
        return outcome
    }

    /// Before `switch` replaces a Codex home's `auth.json`: tokens Codex rotated there are taken
    /// for the account they belong to, once their signature is the issuer's. A login chappie does
    /// not know (what `codex login` leaves) is imported as a new account when it is the issuer's, so
    /// nothing chappie does not hold is overwritten; one that is not, unreadable text, or newer
    /// tokens the issuer did not sign stop the switch unless `force`.
    ///
    /// - Parameter touched: Whether chappie had written there before this switch (``CodexMirror/wasWrittenByChappie``).
    /// - Returns: The account imported, if any.
    @inline(never)  // Swift 6.3's optimiser crashes splitting switchUnderLocks with this inlined.
    private func adoptFromCodexHome(_ mirror: CodexMirror, touched: Bool, force: Bool) async throws -> Account? {
        guard FileManager.default.fileExists(atPath: mirror.file.path) else { return nil }
        let held: CodexAuthFile
        do {
            held = try CodexAuthFile.read(mirror.file)
        } catch {
            if force { return nil }
            throw ServiceError(
                .invalidInput,
                "\(mirror.file.path) does not hold a ChatGPT login chappie can read (\(error)); nothing was written. Pass --force to replace it")
        }
        guard let holder = try await store.account(matching: held.info), held.belongs(to: holder) else {
            // A login chappie never wrote (what `codex login` leaves) is imported whenever it can be;
            // one a chappie process wrote belongs to another data directory, or to an account since
            // removed here: taking it would make two stores redeem one refresh token.
            guard !touched else {
                if force { return nil }
                if try await wasRemovedHere(held.info) { return nil }
                throw ServiceError(
                    .invalidInput,
                    "\(mirror.file.path) holds a login chappie does not know\(held.info.email.map { " (\($0))" } ?? ""), written there by chappie for another data directory or for an account removed since; nothing was written. Switch it from the data directory that has it, or pass --force to replace it"
                )
            }
            do {
                return try await importUnknownLogin(held, from: mirror)
            } catch  where force {
                return nil
            }
        }
        let stored = try await store.credentials(for: holder)
        // Not the issuer's: --force replaces them with the stored tokens.
        if let newer = try await mirror.verifiedNewer(than: stored, for: holder, signatures: signatures, forcing: force) {
            _ = try await store.updateCredentials(
                of: holder, to: newer, accessTokenExpiresAt: held.accessTokenExpiresAt, refreshedAt: held.lastRefresh ?? Date(),
                event: .adopted, detail: "tokens the Codex CLI refreshed in \(mirror.home.path), taken before switching")
        }
        return nil
    }

    /// Whether the audit log has this login's removal from this store: a login chappie wrote for an
    /// account removed since is chappie's own to replace.
    private func wasRemovedHere(_ info: ChappieAccountInfo) async throws -> Bool {
        try await store.events(AuditQuery(kinds: [AuditEventKind.removed.rawValue], limit: 100_000)).contains {
            RemovedLogin.names(info, in: $0.detail)
        }
    }

    /// Imports the login a Codex home holds that chappie does not know, named after its e-mail,
    /// once its signature is the issuer's.
    @inline(never)
    private func importUnknownLogin(_ held: CodexAuthFile, from mirror: CodexMirror) async throws -> Account {
        let who = held.info.email.map { " (\($0))" } ?? ""
        switch await signatures.check(held.credentials) {
        case .verified:
            break
        case .forged(let reason):
            throw ServiceError(
                .invalidInput,
                "\(mirror.file.path) holds a login whose tokens are not the issuer's\(who) (\(reason)); it was not imported and nothing was written. Pass --force to replace it"
            )
        case .unknownKey:
            throw ServiceError(
                .unavailable,
                "\(mirror.file.path) holds a login chappie does not know\(who), signed with a key the issuer does not list (yet); nothing was written. Try again in a minute, or pass --force to replace it"
            )
        case .unchecked(let reason):
            throw ServiceError(
                .unavailable,
                "\(mirror.file.path) holds a login chappie does not know\(who) whose signature could not be checked (\(reason)); nothing was written. Try again when the issuer can be reached, or pass --force to replace it"
            )
        }
        return try await store.save(
            info: held.info, credentials: held.credentials, accessTokenExpiresAt: held.accessTokenExpiresAt,
            refreshedAt: held.lastRefresh, name: nil, event: .imported
        ).account
    }
}

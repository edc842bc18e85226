public import ChappieCore
import Chappie
package import ChappieStore
import ChappieVault
public import Foundation

/// The operation behind `chappie exec`: a Codex home holding one account's fresh tokens, for a
/// command to run as that account without changing the active one.
///
/// An account's tokens live in at most one Codex home (the one-owner rule): the home the account
/// already owns (for the active account, the one `switch` put it in), else a private one under the
/// data directory, `codex-homes/UUID` (0700), which it then owns. Two `exec` of one account share
/// that one home, and the refresher (the daemon, `chappie refresh`) keeps it fresh like any other.
public struct ExecService: Sendable {
    /// What to run a command with.
    public struct Plan: Sendable {
        /// The account the command runs as.
        public var account: Account
        /// Its Codex home.
        public var codexHome: URL
        /// A descriptor holding the home's in-use lock (shared): the command inherits it, so that
        /// while the command runs, the account neither leaves the home nor is removed.
        public var inUseLock: Int32

        /// Why the private home does not share the user's Codex home (`~/.codex` unusable): the
        /// command runs all the same.
        public var sharingProblem: String?

        /// The variables to add to the command's environment: `CODEX_HOME` and `CHAPPIE_ACCOUNT`.
        public var environment: [String: String] {
            ["CODEX_HOME": codexHome.path, "CHAPPIE_ACCOUNT": account.name.rawValue]
        }
    }

    /// The store.
    package let store: any AccountStore
    /// The token service whose refresher keeps Codex homes in step.
    package let tokens: TokenService
    /// The environment (`CODEX_HOME`, `HOME`), for the user's own Codex configuration.
    package let environment: [String: String]

    /// Creates the service.
    package init(store: any AccountStore, tokens: TokenService, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.store = store
        self.tokens = tokens
        self.environment = environment
    }

    /// Whether a directory has the shape of a private Codex home of any chappie data directory,
    /// `codex-homes/UUID`: `$CODEX_HOME` in a command another store's `exec` started.
    public static func isPrivateCodexHome(_ home: URL) -> Bool {
        home.deletingLastPathComponent().lastPathComponent == "codex-homes" && UUID(uuidString: home.lastPathComponent) != nil
    }

    /// Makes an account's Codex home ready for a command: claims a private one when the account
    /// owns none, writes its `config.toml` (from the user's, storing credentials in a file),
    /// refreshes the tokens if they expire within `margin` and leaves the home's `auth.json`
    /// holding the newest tokens (tokens Codex rotated there are adopted first).
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` when the home the account owns holds another login
    ///   (nothing is overwritten); ``ChappieAuthError`` when the tokens cannot be refreshed;
    ///   ``StoreError``.
    public func prepare(_ name: AccountName, margin: Duration = .seconds(300)) async throws -> Plan {
        var account = try await store.account(named: name)
        if account.codexHome == nil {
            account = try await store.claimCodexHome(store.privateCodexHome(of: account).path, for: account)
        }
        guard let path = account.codexHome else { throw ServiceError(.invalidInput, "\(name) lost its Codex home meanwhile; try again") }
        let home = URL(fileURLWithPath: path)
        // Paths, not URLs: a URL of a directory that does not exist yet lacks the trailing slash.
        var sharingProblem: String?
        if home.deletingLastPathComponent().standardizedFileURL.path == store.privateCodexHomes.path {
            for directory in [store.privateCodexHomes, home] { try FilePermissions.ensurePrivateDirectory(directory) }
            let user = store.userCodexHome(environment: environment).home
            try writeConfiguration(into: home, from: user)
            // Sharing is a convenience: a Codex home of the user's that cannot be shared (a file, a
            // dangling link) leaves the private home private, and the command runs.
            do {
                try SharedCodexHome(user: user, home: home).link()
            } catch {
                sharingProblem = "\(user.path) is not shared with \(name)'s private Codex home (\(Self.plain(error))); sessions stay there"
            }
        }
        account = try await tokens.refresher(margin: margin).validCredentials(for: account).account
        let lock = try await publish(account, in: CodexMirror(home: home))
        return Plan(account: account, codexHome: home, inUseLock: lock, sharingProblem: sharingProblem)
    }

    /// Under the account's lock and the home's: the home's `auth.json` ends up holding the stored
    /// tokens: written when absent or older, adopted into the store when Codex rotated them there.
    /// Then the home's in-use lock is taken (shared), on a descriptor the command will inherit.
    private func publish(_ account: Account, in mirror: CodexMirror) async throws -> Int32 {
        try await store.withRefreshLock(on: account) {
            try await bringUpToDate(mirror, of: account)
            let descriptor = open(mirror.inUseURL.path, O_RDWR | O_CREAT, 0o600)
            guard descriptor >= 0, flock(descriptor, LOCK_SH) == 0 else {
                throw ServiceError(.invalidInput, "cannot take the in-use lock in \(mirror.home.path): \(String(cString: strerror(errno)))")
            }
            return descriptor
        }
    }

    /// Holding the home's lock: `auth.json` gets the stored tokens, or the store Codex's newer ones.
    private func bringUpToDate(_ mirror: CodexMirror, of account: Account) async throws {
        let lock = try await FileLock.acquire(mirror.lockURL)
        defer { withExtendedLifetime(lock) {} }
        let current = try await store.account(id: account.id)
        guard current.codexHome == mirror.home.path else {
            throw ServiceError(.invalidInput, "\(current.name) moved to another Codex home meanwhile; try again")
        }
        let stored = try await store.credentials(for: current)
        if try await mirror.adoptNewer(into: store, for: current, stored: stored, taken: "before exec", signatures: tokens.signatures) != nil {
            return
        }
        if let held = try? CodexAuthFile.read(mirror.file), held.belongs(to: current), held.credentials.refreshToken == stored.refreshToken,
            held.credentials.accessToken == stored.accessToken
        {
            return
        }
        guard try mirror.publish(stored, for: current) else {
            throw ServiceError(
                .invalidInput,
                "\(mirror.file.path) holds another login than \(current.name); chappie accounts switch \(current.name) --codex-home \(mirror.home.path) --force takes the home back"
            )
        }
    }

    /// An error's words without Foundation's domain and code.
    private static func plain(_ error: any Error) -> String {
        if let error = error as? ServiceError { return error.message }
        let nsError = error as NSError
        return (nsError.userInfo[NSUnderlyingErrorKey] as? NSError)?.localizedDescription ?? nsError.localizedDescription
    }

    /// Writes the private home's `config.toml`: the user's own, with
    /// `cli_auth_credentials_store = "file"` so Codex reads the `auth.json` chappie keeps there
    /// rather than a keyring.
    private func writeConfiguration(into home: URL, from userHome: URL) throws {
        let source = userHome.appendingPathComponent("config.toml")
        let user = FileManager.default.contents(atPath: source.path).map { String(decoding: $0, as: UTF8.self) }
        let text = Self.configuration(from: user, source: source.path)
        try PrivateFile.write(SecretBytes(copying: Data(text.utf8)), to: home.appendingPathComponent("config.toml"))
    }

    /// The user's Codex configuration with its top-level `cli_auth_credentials_store` replaced by
    /// `"file"` (a top-level key must come before the first table, so it goes first).
    package static func configuration(from user: String?, source: String) -> String {
        var header = "# Written by chappie exec from \(user == nil ? "Codex's defaults" : source); it is replaced on each run.\n"
        header += "cli_auth_credentials_store = \"file\"\n"
        guard let user else { return header }
        var inTable = false
        let kept = user.split(separator: "\n", omittingEmptySubsequences: false).filter { line in
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.hasPrefix("[") { inTable = true }
            guard !inTable, trimmed.hasPrefix("cli_auth_credentials_store") else { return true }
            let rest = trimmed.dropFirst("cli_auth_credentials_store".count).drop { $0 == " " || $0 == "\t" }
            return !rest.hasPrefix("=")
        }
        return header + "\n" + kept.joined(separator: "\n")
    }
}

extension AccountStore {
    /// The directory of the private Codex homes `chappie exec` makes: `codex-homes` in the data directory.
    package var privateCodexHomes: URL { location.directory.appendingPathComponent("codex-homes").standardizedFileURL }

    /// The user's own Codex home: `$CODEX_HOME`, unless it is one of the private homes
    /// (`chappie exec` sets it to those), else `~/.codex`; whether it came from the environment.
    package func userCodexHome(environment: [String: String]) -> (home: URL, fromEnvironment: Bool) {
        if let value = environment["CODEX_HOME"], !value.isEmpty {
            let home = URL(fileURLWithPath: (value as NSString).expandingTildeInPath).standardizedFileURL
            let inside = (home.resolvingSymlinksInPath().path + "/").hasPrefix(privateCodexHomes.resolvingSymlinksInPath().path + "/")
            if !inside, !ExecService.isPrivateCodexHome(home.resolvingSymlinksInPath()) { return (home, true) }
        }
        var environment = environment
        environment["CODEX_HOME"] = nil
        return (CodexAuthFile.defaultHome(environment: environment).standardizedFileURL, false)
    }

    /// An account's private Codex home, `codex-homes/UUID`.
    package func privateCodexHome(of account: Account) -> URL {
        privateCodexHomes.appendingPathComponent(account.uuid.uuidString.lowercased())
    }
}

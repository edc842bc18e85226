public import Chappie
package import ChappieCore
package import ChappieStore
import ChappieVault
public import Foundation

/// The Codex CLI's `auth.json` in the Codex home an account owns: the refresher adopts tokens
/// Codex refreshed there, and writes its own refreshes back (docs/protocol.md §9.3) — both only
/// while the file holds that same account, so a login the user made with `codex login`, or the
/// account `switch` moved there since, is never overwritten.
///
/// Codex takes no lock of its own; chappie's lock (`auth.json.lock`) serialises chappie processes,
/// and adopting on-disk changes covers most of a race with Codex itself.
public struct CodexMirror: CredentialMirror {
    /// The Codex home.
    public let home: URL

    /// A mirror in a Codex home.
    public init(home: URL) {
        self.home = home
    }

    /// `auth.json.lock` beside `auth.json`.
    public var lockURL: URL { home.appendingPathComponent("auth.json.lock") }

    /// Whether a chappie process has written or guarded `auth.json` here (its lock files are
    /// there): a login in it came from chappie, not from `codex login`.
    package var wasWrittenByChappie: Bool {
        FileManager.default.fileExists(atPath: lockURL.path) || FileManager.default.fileExists(atPath: inUseURL.path)
    }

    /// `auth.json`.
    public var file: URL { home.appendingPathComponent("auth.json") }

    /// `.chappie-owner`: the data directory whose `switch` last wrote here. Two stores writing one
    /// home would each redeem the refresh token the other wrote; a restore into a second data
    /// directory, or a `--home` pointed elsewhere, must not make that happen.
    var ownerURL: URL { home.appendingPathComponent(".chappie-owner") }

    /// The data directory named by ``ownerURL`` when it is another one than `directory` and still
    /// exists (one since removed, or a file that does not read as chappie's, names none).
    package func otherOwner(than directory: URL) -> String? {
        let descriptor = open(ownerURL.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        // A link in the marker's place is no marker chappie wrote: someone's, to be looked at.
        guard descriptor >= 0 else { return errno == ELOOP ? "\(ownerURL.path) (a link, not chappie's marker)" : nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self)
        guard let line = text.split(separator: "\n").first, line.hasPrefix(Self.ownerPrefix) else { return nil }
        let owner = String(line.dropFirst(Self.ownerPrefix.count))
        guard owner.hasPrefix("/"), URL(fileURLWithPath: owner).resolvingSymlinksInPath().path != directory.resolvingSymlinksInPath().path else {
            return nil
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: owner, isDirectory: &isDirectory), isDirectory.boolValue else { return nil }
        return owner
    }

    /// Names `directory` in ``ownerURL`` (0600, never through a link).
    package func markOwner(_ directory: URL) throws {
        try PrivateFile.write(SecretBytes(copying: Data((Self.ownerPrefix + directory.standardizedFileURL.path + "\n").utf8)), to: ownerURL)
    }

    private static let ownerPrefix = "data-directory="

    /// Tokens Codex holds for the same account that are newer than `current`: a different refresh
    /// token whose access token expires later (on a tie, whose `last_refresh` is after the
    /// account's). An older file (one chappie has since refreshed past) is never adopted, since its
    /// refresh token was already redeemed.
    package func newerCredentials(than current: Credentials, for account: Account) -> Credentials? {
        guard refusal() == nil, let auth = try? CodexAuthFile.read(file), auth.belongs(to: account), auth.isNewer(than: current, of: account) else {
            return nil
        }
        return auth.credentials
    }

    /// Takes tokens Codex left here that are newer than `stored` (the account's stored tokens) into
    /// the store, as an `adopted` entry saying when (`taken`, such as "before exec"). Call it holding
    /// the account's refresh lock and this home's lock.
    ///
    /// - Returns: The account and its tokens after adopting, or `nil` when nothing here was newer.
    @_optimize(none)  // Swift 6.3.1 -O crashes splitting its callers' coroutines with this inlined (CoroSplit, swifterror).
    package func adoptNewer(
        into store: any AccountStore, for account: Account, stored: Credentials, taken: String, signatures: TokenSignatures, forcing: Bool = false
    ) async throws -> (account: Account, credentials: Credentials)? {
        guard let newer = try await verifiedNewer(than: stored, for: account, signatures: signatures, forcing: forcing) else { return nil }
        let updated = try await store.updateCredentials(
            of: account, to: newer, accessTokenExpiresAt: newer.accessTokenExpiresAt, refreshedAt: Date(), event: .adopted,
            detail: "tokens the Codex CLI refreshed in \(home.path), taken \(taken)")
        return (updated, newer)
    }

    /// Tokens Codex left here that are newer than `stored`, once their signature is the issuer's.
    ///
    /// - Throws: ``ServiceError`` `.configuration` when they are not the issuer's, `.unavailable`
    ///   when their signature cannot be checked now: nothing may be adopted, nor the stored refresh
    ///   token (which Codex may have spent) be redeemed.
    /// - Parameter forcing: Tokens that are not the issuer's, or name a key it does not list, are
    ///   passed over rather than refused (`switch --force`, which writes the stored ones over them).
    @_optimize(none)  // As adoptNewer.
    package func verifiedNewer(than stored: Credentials, for account: Account, signatures: TokenSignatures, forcing: Bool = false) async throws
        -> Credentials?
    {
        guard let newer = newerCredentials(than: stored, for: account) else { return nil }
        switch await signatures.adoption(of: newer, for: account, in: home) {
        case .adopt: return newer
        case .refuse(let why): if forcing { return nil } else { throw ServiceError(.configuration, why) }
        case .unlisted(let why): if forcing { return nil } else { throw ServiceError(.unavailable, why) }
        case .later(let why): throw ServiceError(.unavailable, why)
        }
    }

    /// Why this home must be neither read nor written: `auth.json` or a directory above it belongs
    /// to another user or can be written by one (``SafePath``).
    package func refusal() -> String? {
        SafePath.refusal(file)
    }

    /// The in-use lock `chappie exec` holds (shared, inherited by its command) in this home.
    var inUseURL: URL { home.appendingPathComponent(".chappie-exec.lock") }

    /// Throws when a command `chappie exec` started still runs in this home (it holds the in-use
    /// lock): the Codex there holds the account's refresh token in memory, and moving or removing
    /// the account now would make two parties redeem it. Call it holding the account's refresh lock.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` naming the account, the home and what to do.
    package func refuseWhileInUse(by name: AccountName, doing action: String) throws(ServiceError) {
        let descriptor = open(inUseURL.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) != 0 else { return }
        throw inUse(by: name, doing: action)
    }

    /// As ``refuseWhileInUse(by:doing:)``, and also while a Codex started by hand runs here (a shell
    /// hook's `CODEX_HOME`, ``RunningCodex``): for an account leaving this home, whose tokens that
    /// Codex holds and chappie would go on redeeming from another one.
    package func refuseWhileCodexRuns(by name: AccountName, doing action: String) throws(ServiceError) {
        try refuseWhileInUse(by: name, doing: action)
        let running = RunningCodex.processes(in: home)
        guard running.isEmpty else {
            throw ServiceError(
                .invalidInput,
                "\(name) is in use: Codex runs in \(home.path) (pid \(running.map(String.init).joined(separator: ", "))). Quit it before you \(action): it holds \(name)'s refresh token, which must not be redeemed twice"
            )
        }
    }

    private func inUse(by name: AccountName, doing action: String) -> ServiceError {
        ServiceError(
            .invalidInput,
            "\(name) is in use: a command chappie exec or lease run started still runs in \(home.path). Finish it before you \(action): its Codex holds \(name)'s refresh token, which must not be redeemed twice"
        )
    }

    /// Writes the tokens to `auth.json`, keeping Codex's other fields, when the file is absent or
    /// holds this account; a file holding anything else (another login, an API key, unreadable
    /// text) is left alone.
    package func publish(_ credentials: Credentials, for account: Account) throws -> Bool {
        if let refusal = refusal() { throw ServiceError(.configuration, refusal) }
        if FileManager.default.fileExists(atPath: file.path) {
            guard let current = try? CodexAuthFile.read(file), current.belongs(to: account) else { return false }
        }
        try CodexAuthFile.write(credentials, accountID: account.info.accountID, to: home)
        return true
    }
}

/// What a renewal (a sign-in again, an import of newer tokens) did to the Codex home the account owns.
public enum CodexHomeRenewal: Sendable, Equatable {
    /// The renewed tokens are in this `auth.json`: Codex uses them from its next start.
    case wrote(URL)
    /// Why the home was not written (it holds another login, or may not be written).
    case leftAlone(String)
}

extension CodexMirror {
    /// Writes an account's stored tokens into the Codex home it owns, at once, as a refresh would:
    /// signed in again after its tokens were revoked, the account is of no use to Codex until
    /// its `auth.json` holds the new ones. Under the account's lock, then the home's.
    ///
    /// - Parameter source: The file the tokens were imported from: when it is that `auth.json`,
    ///   there is nothing to write.
    /// - Returns: `nil` when the account owns no home (or `source` is its `auth.json`).
    package static func publishRenewal(
        of account: Account, in store: any AccountStore, signatures: TokenSignatures, from source: URL? = nil
    ) async -> CodexHomeRenewal? {
        guard let path = account.codexHome else { return nil }
        let mirror = CodexMirror(home: URL(fileURLWithPath: path))
        if let source, source.standardizedFileURL.path == mirror.file.standardizedFileURL.path { return nil }
        do {
            return try await store.withRefreshLock(on: account) { () async throws -> CodexHomeRenewal? in
                if let refusal = mirror.refusal() { return .leftAlone(refusal) }
                let lock = try await FileLock.acquire(mirror.lockURL)
                defer { withExtendedLifetime(lock) {} }
                var current = try await store.account(id: account.id)
                guard current.codexHome == path else { return nil }
                var credentials = try await store.credentials(for: current)
                // Tokens Codex rotated there since are taken first, as exec and refreshes do: written
                // over, their refresh token would be lost, or a spent one put back.
                if let adopted = try await mirror.adoptNewer(
                    into: store, for: current, stored: credentials, taken: "before writing renewed tokens", signatures: signatures)
                {
                    (current, credentials) = adopted
                }
                guard try mirror.publish(credentials, for: current) else {
                    return .leftAlone("\(mirror.file.path) holds another login; it was left alone")
                }
                return .wrote(mirror.file)
            }
        } catch {
            return .leftAlone("\(mirror.file.path) could not be written: \(FailureDescription(error, account: account.name)?.message ?? "\(error)")")
        }
    }
}

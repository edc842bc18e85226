import ChappieText
import ChappieCore
package import Chappie
package import ChappieStore
import ChappieVault
public import Foundation

/// `chappie backup` and `chappie restore`: every account (with its tokens), the settings and,
/// optionally, the usage history, in one file sealed under a passphrase; restored by merging.
///
/// A backup is for moving or recovering a store. Two live stores holding the same accounts would
/// both redeem the same rotating refresh tokens, and the second redemption signs the account out.
public struct BackupService: Sendable {
    /// What a backup wrote.
    public struct BackupSummary: Sendable, Encodable {
        /// The file.
        public var file: String
        /// How many accounts, settings and usage readings it holds.
        public var accounts: Int, settings: Int, usageReadings: Int
        /// Why the passphrase is weak (shorter than ``BackupService/shortestGoodPassphrase``
        /// characters), when it is: a stolen backup is only as safe as its passphrase.
        public var passphraseWarning: String?
    }

    /// Below this many characters a backup's passphrase is called weak (a backup holds live logins).
    public static let shortestGoodPassphrase = 12

    /// What a restore did, account by account.
    public struct RestoreSummary: Sendable, Encodable {
        /// What became of an account of the backup.
        public enum Outcome: String, Sendable, Encodable {
            /// Added to this store.
            case added
            /// Its tokens here replaced by the backup's newer ones.
            case updated
            /// Left as it is here.
            case skipped
        }

        /// One account of the backup and what became of it.
        public struct Entry: Sendable, Encodable {
            /// The account's name in the backup.
            public var name: String
            /// What became of it.
            public var outcome: Outcome
            /// Why, for `updated` and `skipped`.
            public var reason: String?

            /// A reference to an account is `account` in every `--json` output (docs/json.md).
            private enum CodingKeys: String, CodingKey {
                case name = "account", outcome, reason
            }
        }

        /// Every account of the backup.
        public var accounts: [Entry]
        /// The settings taken from the backup (those this store did not have).
        public var settingsApplied: [String]
        /// The backup's settings a restore never takes, each with its value and why.
        public var settingsLeftOut: [String] = []
        /// Usage readings added (with `--usage` in the backup).
        public var usageReadingsAdded: Int

        /// The entries with an outcome.
        public func names(_ outcome: Outcome) -> [String] { accounts.filter { $0.outcome == outcome }.map(\.name) }
    }

    /// Where the passphrase comes from: `--passphrase-file FILE`, else `$CHAPPIE_BACKUP_PASSPHRASE`
    /// (taken out of the environment when chappie starts), else asked on the terminal (twice for a
    /// backup).
    public struct PassphraseSource: Sendable {
        /// The file named with `--passphrase-file`: its first line (0600: a file others can read is refused).
        public var file: URL?

        /// A source.
        public init(file: URL?) {
            self.file = file
        }

        /// The passphrase.
        ///
        /// - Throws: ``ServiceError`` `.configuration` for an unusable file, `.cancelled` when none
        ///   is given and there is no terminal, `.invalidInput` for an empty one or two that differ.
        func passphrase(confirming: Bool) throws(ServiceError) -> SecretBytes {
            let passphrase: SecretBytes
            if let file {
                do {
                    passphrase = try PrivateSecretFile.firstLine(of: file, what: "passphrase file")
                } catch {
                    throw ServiceError(.configuration, error.message)
                }
            } else if let given = EnvironmentSecrets.backupPassphrase {
                passphrase = given
            } else {
                guard let asked = PassphrasePrompt.ask("Backup passphrase: ") else {
                    throw ServiceError(
                        .cancelled, "a backup passphrase is needed: give --passphrase-file FILE or $CHAPPIE_BACKUP_PASSPHRASE, or run on a terminal")
                }
                if confirming {
                    guard let again = PassphrasePrompt.ask("The same passphrase again: "), again.constantTimeEquals(asked) else {
                        throw ServiceError(.invalidInput, "the two passphrases differ; nothing was written")
                    }
                }
                passphrase = asked
            }
            guard passphrase.count > 0 else { throw ServiceError(.invalidInput, "the backup passphrase is empty") }
            return passphrase
        }

    }

    /// The store.
    package let store: any AccountStore
    /// What a backup may never be written over.
    let ownFiles: OwnFiles
    /// Checks the issuer's signature on tokens Codex left in a home before they are adopted.
    let signatures: TokenSignatures

    /// Creates the service; `ownFiles` lists the store's files, which a backup never replaces
    /// (by default those of its location).
    package init(store: any AccountStore, signatures: TokenSignatures, ownFiles: OwnFiles? = nil) {
        self.store = store
        self.signatures = signatures
        self.ownFiles = ownFiles ?? OwnFiles(location: store.location, source: nil, environment: [:])
    }

    /// Writes every account, the settings and (with `usage`) the usage history to `file`, sealed
    /// under `passphrase` (Argon2id, XChaCha20-Poly1305), mode 0600, through a temporary file in
    /// its directory renamed over it (an existing file is never truncated in place). Never over
    /// one of chappie's own files (``OwnFiles``) or inside its directories.
    ///
    /// - Throws: ``StoreError`` when an account's credentials do not open (nothing is written: a
    ///   backup that silently lacks an account would be found out too late); ``VaultError``.
    public func backup(to file: URL, passphrase source: PassphraseSource, usage: Bool, replacing: Bool = false) async throws -> BackupSummary {
        var ownFiles = ownFiles
        ownFiles.files += [source.file].compactMap { $0 }
        if let refusal = ownFiles.refusal(forWriting: file) { throw ServiceError(.invalidInput, "\(refusal); nothing was written") }
        if FileManager.default.fileExists(atPath: file.path), !replacing {
            throw ServiceError(.invalidInput, "\(file.path) exists; pass --force to replace it")
        }
        let passphrase = try source.passphrase(confirming: true)
        var entries: [BackupFile.AccountEntry] = []
        var readings: [String: [UsageSample]] = [:]
        let accounts = try await store.accounts()
        for account in accounts {
            // Under the account's lock: no refresh redeems the tokens between reading and writing them;
            // newer tokens Codex left in the account's home are taken first (the stored ones are spent).
            let (current, credentials) = try await store.withRefreshLock(on: account) { try await newestCredentials(of: account) }
            entries.append(
                BackupFile.AccountEntry(
                    name: current.name.rawValue, idToken: credentials.idToken, accessToken: credentials.accessToken,
                    refreshToken: credentials.refreshToken, accessTokenExpiresAt: current.accessTokenExpiresAt,
                    lastRefreshAt: current.lastRefreshAt, reservePercent: current.reservePercent, autoSwitch: current.autoSwitch,
                    priority: current.priority, createdAt: current.createdAt))
            if usage { readings[current.name.rawValue] = try await store.usageSamples(for: current, since: nil, until: nil) }
        }
        var settings: [String: String] = [:]
        if let home = try await store.defaultCodexHome() { settings[SettingsService.Key.codexHome.rawValue] = home }
        if let retention = try await store.usageRetention() { settings[SettingsService.Key.usageRetention.rawValue] = String(retention) }
        let payload = BackupFile.Payload(
            createdAt: Date(), chappieVersion: ChappieVersion.current, accounts: entries, settings: settings, usage: usage ? readings : nil)
        let sealed = try BackupFile.seal(payload, passphrase: passphrase)
        try PrivateFile.write(SecretBytes(copying: sealed), to: file)
        try? await store.recordEvent(.settingChanged, account: nil, detail: "backup of \(entries.count) accounts written to \(file.path)")
        // Characters, counted without a copy of the passphrase: UTF-8 bytes that start one.
        let length = passphrase.withUnsafeBytes { bytes in bytes.reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) } }
        return BackupSummary(
            file: file.path, accounts: entries.count, settings: settings.count, usageReadings: readings.values.map(\.count).reduce(0, +),
            passphraseWarning: length < Self.shortestGoodPassphrase
                ? "the passphrase has \(length) characters: whoever gets the file can try passphrases without limit, and it holds live logins; use \(Self.shortestGoodPassphrase) or more (four random words), and keep the file where only you can read it"
                : nil)
    }

    /// The account as it is now with its tokens, after adopting newer ones from the Codex home it
    /// owns (under that home's lock).
    private func newestCredentials(of account: Account) async throws -> (Account, Credentials) {
        let current = try await store.account(id: account.id)
        let stored = try await store.credentials(for: current)
        guard let home = current.codexHome else { return (current, stored) }
        let mirror = CodexMirror(home: URL(fileURLWithPath: home))
        let lock = try await FileLock.acquire(mirror.lockURL)
        defer { withExtendedLifetime(lock) {} }
        return try await mirror.adoptNewer(into: store, for: current, stored: stored, taken: "before a backup", signatures: signatures) ?? (
            current, stored
        )
    }

    /// Merges a backup into this store. Accounts are matched by ChatGPT account and user id: one
    /// this store lacks is added (a name already taken by another account skips it); one it has is
    /// updated only when the backup's tokens are known to be newer (``order(backup:live:)``),
    /// never replacing newer ones. Settings this store lacks are taken; usage readings it lacks are added.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` for a wrong passphrase or a damaged file (nothing
    ///   changed); ``StoreError``.
    public func restore(from file: URL, passphrase source: PassphraseSource) async throws -> RestoreSummary {
        let data = try BackupFile.read(file)
        let passphrase = try source.passphrase(confirming: false)
        let payload = try BackupFile.open(data, passphrase: passphrase, path: file.path)
        // Every entry is checked before anything is written: a bad one changes nothing.
        let parsed = try payload.accounts.map { entry throws -> (BackupFile.AccountEntry, AccountName, ChappieAccountInfo) in
            guard let name = try? AccountName(entry.name), let claims = try? TokenClaims(jwt: entry.idToken) else {
                throw ServiceError(
                    .invalidInput, "\(file.path) holds an account (\(TerminalText.sanitized(entry.name))) that is not usable. Nothing was changed")
            }
            return (entry, name, claims.account)
        }
        var summary = RestoreSummary(accounts: [], settingsApplied: [], usageReadingsAdded: 0)
        for (entry, name, info) in parsed {
            let (outcome, target) = try await restore(entry, name: name, info: info)
            summary.accounts.append(outcome)
            if let target, let readings = payload.usage?[entry.name] {
                summary.usageReadingsAdded += try await addUsage(readings, to: target)
            }
        }
        summary.settingsApplied = try await applySettings(payload.settings)
        // A path of the machine (and data directory) the backup came from: taken here, two stores
        // would each own that one Codex home and redeem the refresh tokens the other wrote there.
        if let home = payload.settings[SettingsService.Key.codexHome.rawValue] {
            summary.settingsLeftOut.append(
                "codex-home (\(home)) is a setting of the machine and data directory the backup came from; set this one's with chappie config set codex-home DIR, or let chappie accounts switch find it"
            )
        }
        return summary
    }

    private func restore(
        _ entry: BackupFile.AccountEntry, name: AccountName, info: ChappieAccountInfo
    ) async throws -> (RestoreSummary.Entry, Account?) {
        let credentials = Credentials(idToken: entry.idToken, accessToken: entry.accessToken, refreshToken: entry.refreshToken)
        guard let existing = try await store.account(matching: info) else {
            if let holder = try? await store.account(named: name) {
                let reason = "the name is taken here by another account (\(holder.info.email ?? "no e-mail")); rename one and restore again"
                return (.init(name: entry.name, outcome: .skipped, reason: reason), nil)
            }
            let saved = try await store.withKeyHeld {
                try await store.save(
                    info: info, credentials: credentials, accessTokenExpiresAt: entry.accessTokenExpiresAt,
                    refreshedAt: entry.lastRefreshAt, name: name, event: .restored)
            }
            if let reserve = entry.reservePercent { _ = try await store.setReserve(reserve, for: saved.account.name) }
            if entry.autoSwitch == false || (entry.priority ?? 0) != 0 {
                _ = try await store.setChoice(
                    autoSwitch: entry.autoSwitch,
                    priority: entry.priority.map { min(max($0, Account.priorities.lowerBound), Account.priorities.upperBound) },
                    for: saved.account.name)
            }
            return (.init(name: entry.name, outcome: .added, reason: nil), saved.account)
        }
        return try await store.withRefreshLock(on: existing) {
            let current = try await store.account(id: existing.id)
            let stored: Credentials?
            do {
                stored = try await store.credentials(for: current)
            } catch let error as StoreError where error.code == .moving {
                // Its tokens are on their way to the pool: the backup's must not follow them there.
                return (.init(name: entry.name, outcome: .skipped, reason: error.message), current)
            } catch {
                stored = nil
            }
            if let stored, stored.refreshToken == credentials.refreshToken {
                return (.init(name: entry.name, outcome: .skipped, reason: "already holds the same tokens, as \(current.name)"), current)
            }
            if let stored {
                switch Self.order(backup: (credentials, entry.lastRefreshAt), live: (stored, current.lastRefreshAt)) {
                case .backupNewer: break
                case .liveNewer:
                    return (.init(name: entry.name, outcome: .skipped, reason: "\(current.name) here holds newer tokens than the backup"), current)
                case .unknown:
                    let reason = "cannot tell whether the backup's tokens are newer than those of \(current.name) here, so this store's are kept"
                    return (.init(name: entry.name, outcome: .skipped, reason: reason), current)
                }
            }
            let updated = try await store.withKeyHeld {
                try await store.updateCredentials(
                    of: current, to: credentials, accessTokenExpiresAt: entry.accessTokenExpiresAt, refreshedAt: entry.lastRefreshAt ?? Date(),
                    event: .restored, detail: "newer tokens from a backup")
            }
            let reason = stored == nil ? "its credentials here did not open" : "the backup's tokens are newer"
            return (.init(name: entry.name, outcome: .updated, reason: "\(reason) (as \(current.name))"), updated)
        }
    }

    /// Which of two sets of one account's tokens is newer.
    enum TokenOrder: Equatable { case backupNewer, liveNewer, unknown }

    /// Orders the backup's tokens against the live ones by when the issuer made them: the access
    /// token's `iat` (else the id_token's), which every token the issuer makes carries; then by the
    /// recorded last refresh when both sides have one. Anything else is `unknown`, and the live
    /// tokens stay: replacing newer tokens with spent ones signs the account out at its next refresh.
    static func order(backup: (Credentials, refreshedAt: Date?), live: (Credentials, refreshedAt: Date?)) -> TokenOrder {
        func issued(_ credentials: Credentials) -> Date? {
            (try? TokenClaims(jwt: credentials.accessToken))?.issuedAt ?? (try? TokenClaims(jwt: credentials.idToken))?.issuedAt
        }
        if let theirs = issued(backup.0), let ours = issued(live.0), theirs != ours { return theirs > ours ? .backupNewer : .liveNewer }
        if let theirs = backup.refreshedAt, let ours = live.refreshedAt, theirs != ours { return theirs > ours ? .backupNewer : .liveNewer }
        return .unknown
    }

    /// Adds the readings the account lacks (same time, source and limit); returns how many. A
    /// reading dated ahead of now (beyond ``UsageSample/futureTolerance``) is left out: stored, it
    /// would read as the newest until its date came.
    private func addUsage(_ readings: [UsageSample], to account: Account) async throws -> Int {
        struct Key: Hashable {
            var at: Date
            var source: UsageSource
            var limit: String
        }
        let present = Set(
            try await store.usageSamples(for: account, since: nil, until: nil).map { Key(at: $0.observedAt, source: $0.source, limit: $0.limitID) })
        var added = 0
        let now = Date()
        for reading in readings
        where reading.observedAt.timeIntervalSince(now) <= UsageSample.futureTolerance
            && !present.contains(Key(at: reading.observedAt, source: reading.source, limit: reading.limitID))
        {
            try await store.recordUsage([reading.snapshot], for: account, source: reading.source, at: reading.observedAt)
            added += 1
        }
        return added
    }

    /// Takes the backup's settings this store does not have, but `codex-home`; returns their names.
    private func applySettings(_ settings: [String: String]) async throws -> [String] {
        var applied: [String] = []
        if let retention = settings[SettingsService.Key.usageRetention.rawValue].flatMap(Double.init), try await store.usageRetention() == nil {
            try await store.setUsageRetention(retention)
            applied.append(SettingsService.Key.usageRetention.rawValue)
        }
        return applied
    }
}

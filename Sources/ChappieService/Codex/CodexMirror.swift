public import Chappie
package import ChappieCore
import ChappieStore
public import Foundation

/// The Codex CLI's `auth.json` in the Codex home an account owns: the refresher adopts tokens
/// Codex refreshed there, and writes its own refreshes back (openai-protocol.md §9.3) — both only
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

    /// `auth.json`.
    public var file: URL { home.appendingPathComponent("auth.json") }

    /// Tokens Codex holds for the same account that are newer than `current`: a different refresh
    /// token whose access token expires later (on a tie, whose `last_refresh` is after the
    /// account's). An older file (one chappie has since refreshed past) is never adopted, since its
    /// refresh token was already redeemed.
    package func newerCredentials(than current: Credentials, for account: Account) -> Credentials? {
        guard let auth = try? CodexAuthFile.read(file), auth.belongs(to: account), auth.isNewer(than: current, of: account) else { return nil }
        return auth.credentials
    }

    /// Writes the tokens to `auth.json`, keeping Codex's other fields, when the file is absent or
    /// holds this account; a file holding anything else (another login, an API key, unreadable
    /// text) is left alone.
    package func publish(_ credentials: Credentials, for account: Account) throws -> Bool {
        if FileManager.default.fileExists(atPath: file.path) {
            guard let current = try? CodexAuthFile.read(file), current.belongs(to: account) else { return false }
        }
        try CodexAuthFile.write(credentials, accountID: account.info.accountID, to: home)
        return true
    }
}

public import Chappie
public import ChappieCore
public import ChappieStore
public import Foundation

/// The Codex CLI's `auth.json` for an account that `switch` exported there: the refresher adopts
/// tokens Codex refreshed, and writes its own refreshes back (openai-protocol.md §9.3).
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

    private var file: URL { home.appendingPathComponent("auth.json") }

    /// Tokens Codex holds for the same ChatGPT account that are newer than `current`: a different
    /// refresh token whose access token expires later. An older file (one chappie has since
    /// refreshed past) is never adopted, since its refresh token was already redeemed.
    public func newerCredentials(than current: Credentials, for account: Account) -> Credentials? {
        guard let auth = try? CodexAuthFile.read(file) else { return nil }
        guard auth.info.accountID == account.info.accountID,
            auth.info.userID == nil || account.info.userID == nil || auth.info.userID == account.info.userID,
            auth.credentials.refreshToken != current.refreshToken
        else { return nil }
        let theirs = auth.accessTokenExpiresAt ?? .distantPast
        let ours = (try? TokenClaims(jwt: current.accessToken))?.expiresAt ?? .distantPast
        return theirs > ours ? auth.credentials : nil
    }

    /// Writes the tokens to `auth.json`, keeping Codex's other fields.
    public func publish(_ credentials: Credentials, for account: Account) throws {
        try CodexAuthFile.write(credentials, accountID: account.info.accountID, to: home)
    }
}

public import ChappieCore
public import Foundation

/// Whether an account can be used.
public enum AccountStatus: String, Sendable, Codable, CaseIterable {
    /// Tokens are usable or refreshable.
    case ok
    /// The refresh token is dead: the account must be signed in again.
    case reauthRequired = "reauth_required"
    /// Set aside by the user.
    case disabled
}

/// A stored account: who it is and the state of its tokens, without the tokens themselves.
public struct Account: Sendable, Hashable, Codable {
    /// The row id (stable across renames).
    public var id: Int64
    /// The slot name the user types.
    public var name: AccountName
    /// Who the account is, from its id_token.
    public var info: ChappieAccountInfo
    /// Whether it can be used.
    public var status: AccountStatus
    /// When the stored access token expires.
    public var accessTokenExpiresAt: Date?
    /// When the tokens were last refreshed (or imported, or signed in).
    public var lastRefreshAt: Date?
    /// The last failure, as a message for people.
    public var lastError: String?
    /// The Codex home this account was last written to by `switch`.
    public var codexHome: String?
    /// At or above this used percent the account counts as full (`nil`: 100).
    public var reservePercent: Double?
    /// When the account was added.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date
    /// Whether it is the active account.
    public var isActive: Bool
}

/// The three tokens of an account. Held as `String`s because HTTP needs them so; they are sealed at
/// rest and never logged.
public struct Credentials: Sendable, Equatable, Codable {
    /// The id_token JWT (who the account is).
    public var idToken: String
    /// The access_token JWT (the bearer token).
    public var accessToken: String
    /// The refresh token (rotating, single use).
    public var refreshToken: String

    /// Creates credentials.
    public init(idToken: String, accessToken: String, refreshToken: String) {
        self.idToken = idToken
        self.accessToken = accessToken
        self.refreshToken = refreshToken
    }

    enum CodingKeys: String, CodingKey {
        case idToken = "id_token"
        case accessToken = "access_token"
        case refreshToken = "refresh_token"
    }
}

extension Credentials {
    /// The access token's `exp`, when it is a readable JWT.
    public var accessTokenExpiresAt: Date? { (try? TokenClaims(jwt: accessToken))?.expiresAt }
}

extension Credentials: RedactedDescription {
    /// Every token redacted.
    public var redactedFields: KeyValuePairs<String, String> {
        ["idToken": redactedMarker, "accessToken": redactedMarker, "refreshToken": redactedMarker]
    }
}

/// One entry of the audit log.
public struct AuditEvent: Sendable, Hashable, Codable {
    /// When it happened.
    public var at: Date
    /// What happened: `imported`, `switched`, `renamed`, `removed`, `key_rotated`, ….
    public var kind: String
    /// The account it concerns, by name at the time.
    public var accountName: String?
    /// More about it, never a secret.
    public var detail: String
}

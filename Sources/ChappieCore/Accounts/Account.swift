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
    /// The store's id of the account (stable across renames; local to one store).
    public var id: Int64
    /// The account's identity everywhere (stable across renames and across stores): sealed
    /// credentials are bound to it.
    public var uuid: UUID
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
    /// The Codex home whose `auth.json` this account owns (`switch` wrote it there).
    public var codexHome: String?
    /// At or above this used percent the account counts as full (`nil`: 100).
    public var reservePercent: Double?
    /// When the account was added.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date
    /// Whether it is the active account.
    public var isActive: Bool
    /// How many leases may hold the account at once (`accounts set NAME --max-leases K`); a lease
    /// that hands out a Codex home takes them all.
    public var maxLeases: Int

    /// Creates an account as a store reads it.
    public init(
        id: Int64, uuid: UUID, name: AccountName, info: ChappieAccountInfo, status: AccountStatus, accessTokenExpiresAt: Date?,
        lastRefreshAt: Date?, lastError: String?, codexHome: String?, reservePercent: Double?, createdAt: Date, updatedAt: Date,
        isActive: Bool, maxLeases: Int = 1
    ) {
        self.id = id
        self.uuid = uuid
        self.name = name
        self.info = info
        self.status = status
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.lastRefreshAt = lastRefreshAt
        self.lastError = lastError
        self.codexHome = codexHome
        self.reservePercent = reservePercent
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.isActive = isActive
        self.maxLeases = maxLeases
    }
}

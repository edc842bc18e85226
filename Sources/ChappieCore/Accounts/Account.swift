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
    /// Whether chappie may choose the account by itself: auto-switch, `--best`, failover and leases
    /// that name none (`accounts set NAME --auto off` keeps it out; it is still used by name).
    public var autoSwitch: Bool
    /// Among the accounts chappie may choose, a higher priority comes first; headroom orders those
    /// of one priority (`accounts set NAME --priority N`; default 0).
    public var priority: Int

    /// Creates an account as a store reads it.
    public init(
        id: Int64, uuid: UUID, name: AccountName, info: ChappieAccountInfo, status: AccountStatus, accessTokenExpiresAt: Date?,
        lastRefreshAt: Date?, lastError: String?, codexHome: String?, reservePercent: Double?, createdAt: Date, updatedAt: Date,
        isActive: Bool, maxLeases: Int = 1, autoSwitch: Bool = true, priority: Int = 0
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
        self.autoSwitch = autoSwitch
        self.priority = priority
    }

    /// The range of a priority.
    public static let priorities = -1000...1000
}

extension Account {
    private enum CodingKeys: String, CodingKey {
        case id, uuid, name, info, status, accessTokenExpiresAt, lastRefreshAt, lastError, codexHome, reservePercent, createdAt, updatedAt
        case isActive, maxLeases, autoSwitch, priority
    }

    /// Decodes an account; `autoSwitch` and `priority` may be absent (a daemon older than them).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(Int64.self, forKey: .id), uuid: try container.decode(UUID.self, forKey: .uuid),
            name: try container.decode(AccountName.self, forKey: .name), info: try container.decode(ChappieAccountInfo.self, forKey: .info),
            status: try container.decode(AccountStatus.self, forKey: .status),
            accessTokenExpiresAt: try container.decodeIfPresent(Date.self, forKey: .accessTokenExpiresAt),
            lastRefreshAt: try container.decodeIfPresent(Date.self, forKey: .lastRefreshAt),
            lastError: try container.decodeIfPresent(String.self, forKey: .lastError),
            codexHome: try container.decodeIfPresent(String.self, forKey: .codexHome),
            reservePercent: try container.decodeIfPresent(Double.self, forKey: .reservePercent),
            createdAt: try container.decode(Date.self, forKey: .createdAt), updatedAt: try container.decode(Date.self, forKey: .updatedAt),
            isActive: try container.decode(Bool.self, forKey: .isActive), maxLeases: try container.decode(Int.self, forKey: .maxLeases),
            autoSwitch: try container.decodeIfPresent(Bool.self, forKey: .autoSwitch) ?? true,
            priority: try container.decodeIfPresent(Int.self, forKey: .priority) ?? 0)
    }
}

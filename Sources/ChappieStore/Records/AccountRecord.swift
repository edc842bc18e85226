package import ChappieCore
package import Foundation
package import GRDB

/// A row of `accounts`.
package struct AccountRecord: Codable, FetchableRecord, MutablePersistableRecord {
    package static let databaseTableName = "accounts"
    package static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    package static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    /// The columns queries filter and sort by.
    package enum Columns {
        static let id = Column("id")
        static let uuid = Column("uuid")
        static let name = Column("name")
        static let email = Column("email")
        static let chatgptAccountId = Column("chatgpt_account_id")
        static let chatgptUserId = Column("chatgpt_user_id")
        static let codexHome = Column("codex_home")
        static let updatedAt = Column("updated_at")
    }

    package var id: Int64?
    /// The account's stable identity, lower-case (migration 0004).
    package var uuid: String
    package var name: String
    package var email: String?
    package var chatgptAccountId: String?
    package var chatgptUserId: String?
    package var plan: String?
    package var isFedramp: Bool
    package var status: String
    package var accessExpiresAt: Date?
    package var lastRefreshAt: Date?
    package var lastError: String?
    package var codexHome: String?
    package var reservePercent: Double?
    /// How many leases may hold the account at once (migration 0005).
    package var maxLeases: Int
    /// Whether chappie may choose the account by itself (migration 0008).
    package var autoSwitch: Bool = true
    /// Its priority among those chappie may choose (migration 0008).
    package var priority: Int = 0
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        id: Int64?, uuid: String, name: String, email: String?, chatgptAccountId: String?, chatgptUserId: String?, plan: String?,
        isFedramp: Bool, status: String, accessExpiresAt: Date?, lastRefreshAt: Date?, lastError: String?, codexHome: String?,
        reservePercent: Double?, maxLeases: Int, autoSwitch: Bool = true, priority: Int = 0, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.uuid = uuid
        self.name = name
        self.email = email
        self.chatgptAccountId = chatgptAccountId
        self.chatgptUserId = chatgptUserId
        self.plan = plan
        self.isFedramp = isFedramp
        self.status = status
        self.accessExpiresAt = accessExpiresAt
        self.lastRefreshAt = lastRefreshAt
        self.lastError = lastError
        self.codexHome = codexHome
        self.reservePercent = reservePercent
        self.maxLeases = maxLeases
        self.autoSwitch = autoSwitch
        self.priority = priority
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    package mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    /// A new account's row, with a fresh identity.
    package static func new(at now: Date) -> AccountRecord {
        AccountRecord(
            id: nil, uuid: UUID().uuidString.lowercased(), name: "", email: nil, chatgptAccountId: nil, chatgptUserId: nil, plan: nil,
            isFedramp: false, status: AccountStatus.ok.rawValue, accessExpiresAt: nil, lastRefreshAt: nil, lastError: nil, codexHome: nil,
            reservePercent: nil, maxLeases: 1, createdAt: now, updatedAt: now)
    }

    /// New tokens stored: the times they came with, status back to ok, error cleared.
    package mutating func storeTokens(accessExpiresAt: Date?, refreshedAt: Date?, at now: Date = Date()) {
        self.accessExpiresAt = accessExpiresAt
        lastRefreshAt = refreshedAt
        status = AccountStatus.ok.rawValue
        lastError = nil
        updatedAt = now
    }

    /// The e-mail and plan of `info` (new tokens' claims), taken over when they name this
    /// account and user; the change as `plan plus → pro`, or `nil` when nothing changed. A value
    /// that is empty, longer than an e-mail or a plan can be, or holds control or bidirectional
    /// characters is not taken: a claim is a server's text.
    package mutating func takeIdentity(_ info: ChappieAccountInfo) -> String? {
        guard info.accountID == chatgptAccountId, info.userID == nil || info.userID == chatgptUserId else { return nil }
        func acceptable(_ text: String, longest: Int) -> Bool {
            !text.isEmpty && text.count <= longest
                && !text.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }
        }
        var changes: [String] = []
        if let plan = info.plan?.rawValue, plan != self.plan, acceptable(plan, longest: 64) {
            changes.append("plan \(self.plan ?? "unknown") → \(plan)")
            self.plan = plan
        }
        if let email = info.email, email != self.email, acceptable(email, longest: 320) {
            changes.append("e-mail \(self.email ?? "unknown") → \(email)")
            self.email = email
        }
        return changes.isEmpty ? nil : changes.joined(separator: ", ")
    }

    /// A sign-in's identity taken over (e-mail, ids, plan), with its tokens' times.
    package mutating func signIn(_ info: ChappieAccountInfo, accessExpiresAt: Date?, refreshedAt: Date?, at now: Date) {
        email = info.email
        chatgptAccountId = info.accountID
        chatgptUserId = info.userID
        plan = info.plan?.rawValue
        isFedramp = info.isFedRAMPAccount
        storeTokens(accessExpiresAt: accessExpiresAt, refreshedAt: refreshedAt, at: now)
    }

    /// The public model; a name, status or identity the schema's checks let through but chappie
    /// does not know is reported as a damaged store rather than crashing.
    package func account(activeID: Int64?) throws(StoreError) -> Account {
        guard let id, let name = try? AccountName(name), let status = AccountStatus(rawValue: status), let identity = UUID(uuidString: uuid) else {
            throw StoreError(.corrupt, "the accounts table has a row chappie cannot read (row \(id ?? -1))")
        }
        return Account(
            id: id, uuid: identity, name: name,
            info: ChappieAccountInfo(
                email: email, userID: chatgptUserId, accountID: chatgptAccountId,
                plan: plan.map(ChappiePlan.init(rawValue:)), isFedRAMPAccount: isFedramp),
            // Times and numbers checked as outside input (a pool's rows are anyone's who can write it).
            status: status, accessTokenExpiresAt: accessExpiresAt.flatMap { StoredNumber.date($0.timeIntervalSince1970) },
            lastRefreshAt: lastRefreshAt.flatMap { StoredNumber.date($0.timeIntervalSince1970) }, lastError: lastError, codexHome: codexHome,
            reservePercent: reservePercent.flatMap { $0.isFinite && $0 > 0 ? min($0, 100) : nil }, createdAt: StoredNumber.clamped(createdAt),
            updatedAt: StoredNumber.clamped(updatedAt), isActive: id == activeID, maxLeases: max(1, maxLeases), autoSwitch: autoSwitch,
            priority: min(max(priority, Account.priorities.lowerBound), Account.priorities.upperBound))
    }
}

extension AccountRecord {
    /// Decodes a row; a time that does not read back (an older chappie stored whatever a token
    /// claimed, such as a year past 9999) is unknown rather than making every account unreadable.
    package init(from decoder: any Decoder) throws {
        let row = try decoder.container(keyedBy: CodingKeys.self)
        func time(_ key: CodingKeys) -> Date? { (try? row.decodeIfPresent(Date.self, forKey: key)) ?? nil }
        id = try row.decodeIfPresent(Int64.self, forKey: .id)
        uuid = try row.decode(String.self, forKey: .uuid)
        name = try row.decode(String.self, forKey: .name)
        email = try row.decodeIfPresent(String.self, forKey: .email)
        chatgptAccountId = try row.decodeIfPresent(String.self, forKey: .chatgptAccountId)
        chatgptUserId = try row.decodeIfPresent(String.self, forKey: .chatgptUserId)
        plan = try row.decodeIfPresent(String.self, forKey: .plan)
        isFedramp = try row.decode(Bool.self, forKey: .isFedramp)
        status = try row.decode(String.self, forKey: .status)
        accessExpiresAt = time(.accessExpiresAt)
        lastRefreshAt = time(.lastRefreshAt)
        lastError = try row.decodeIfPresent(String.self, forKey: .lastError)
        codexHome = try row.decodeIfPresent(String.self, forKey: .codexHome)
        reservePercent = (try? row.decodeIfPresent(Double.self, forKey: .reservePercent)) ?? nil
        maxLeases = try row.decode(Int.self, forKey: .maxLeases)
        autoSwitch = (try? row.decodeIfPresent(Bool.self, forKey: .autoSwitch)) ?? true
        priority = (try? row.decodeIfPresent(Int.self, forKey: .priority)) ?? 0
        createdAt = time(.createdAt) ?? Date(timeIntervalSince1970: 0)
        updatedAt = time(.updatedAt) ?? Date(timeIntervalSince1970: 0)
    }
}

extension AccountRecord {
    /// The audit detail of `accounts set NAME --auto … --priority …`.
    package static func choiceDetail(autoSwitch: Bool?, priority: Int?) -> String {
        [autoSwitch.map { "auto = \($0 ? "on" : "off")" }, priority.map { "priority = \($0)" }].compactMap { $0 }.joined(separator: ", ")
    }
}

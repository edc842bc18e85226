import ChappieCore
import Foundation
import GRDB

/// A row of `accounts`.
struct AccountRecord: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "accounts"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    /// The columns queries filter and sort by.
    enum Columns {
        static let id = Column("id")
        static let uuid = Column("uuid")
        static let name = Column("name")
        static let email = Column("email")
        static let chatgptAccountId = Column("chatgpt_account_id")
        static let chatgptUserId = Column("chatgpt_user_id")
        static let codexHome = Column("codex_home")
        static let updatedAt = Column("updated_at")
    }

    var id: Int64?
    /// The account's stable identity, lower-case (migration 0004).
    var uuid: String
    var name: String
    var email: String?
    var chatgptAccountId: String?
    var chatgptUserId: String?
    var plan: String?
    var isFedramp: Bool
    var status: String
    var accessExpiresAt: Date?
    var lastRefreshAt: Date?
    var lastError: String?
    var codexHome: String?
    var reservePercent: Double?
    /// How many leases may hold the account at once (migration 0005).
    var maxLeases: Int
    var createdAt: Date
    var updatedAt: Date

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    /// A new account's row, with a fresh identity.
    static func new(at now: Date) -> AccountRecord {
        AccountRecord(
            id: nil, uuid: UUID().uuidString.lowercased(), name: "", email: nil, chatgptAccountId: nil, chatgptUserId: nil, plan: nil,
            isFedramp: false, status: AccountStatus.ok.rawValue, accessExpiresAt: nil, lastRefreshAt: nil, lastError: nil, codexHome: nil,
            reservePercent: nil, maxLeases: 1, createdAt: now, updatedAt: now)
    }

    /// New tokens stored: the times they came with, status back to ok, error cleared.
    mutating func storeTokens(accessExpiresAt: Date?, refreshedAt: Date?, at now: Date = Date()) {
        self.accessExpiresAt = accessExpiresAt
        lastRefreshAt = refreshedAt
        status = AccountStatus.ok.rawValue
        lastError = nil
        updatedAt = now
    }

    /// A sign-in's identity taken over (e-mail, ids, plan), with its tokens' times.
    mutating func signIn(_ info: ChappieAccountInfo, accessExpiresAt: Date?, refreshedAt: Date?, at now: Date) {
        email = info.email
        chatgptAccountId = info.accountID
        chatgptUserId = info.userID
        plan = info.plan?.rawValue
        isFedramp = info.isFedRAMPAccount
        storeTokens(accessExpiresAt: accessExpiresAt, refreshedAt: refreshedAt, at: now)
    }

    /// The public model; a name, status or identity the schema's checks let through but chappie
    /// does not know is reported as a damaged store rather than crashing.
    func account(activeID: Int64?) throws(StoreError) -> Account {
        guard let id, let name = try? AccountName(name), let status = AccountStatus(rawValue: status), let identity = UUID(uuidString: uuid) else {
            throw StoreError(.corrupt, "the accounts table has a row chappie cannot read (row \(id ?? -1))")
        }
        return Account(
            id: id, uuid: identity, name: name,
            info: ChappieAccountInfo(
                email: email, userID: chatgptUserId, accountID: chatgptAccountId,
                plan: plan.map(ChappiePlan.init(rawValue:)), isFedRAMPAccount: isFedramp),
            status: status, accessTokenExpiresAt: accessExpiresAt, lastRefreshAt: lastRefreshAt,
            lastError: lastError, codexHome: codexHome, reservePercent: reservePercent, createdAt: createdAt, updatedAt: updatedAt,
            isActive: id == activeID, maxLeases: maxLeases)
    }
}

extension AccountRecord {
    /// Decodes a row; a time that does not read back (an older chappie stored whatever a token
    /// claimed, such as a year past 9999) is unknown rather than making every account unreadable.
    init(from decoder: any Decoder) throws {
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
        createdAt = time(.createdAt) ?? Date(timeIntervalSince1970: 0)
        updatedAt = time(.updatedAt) ?? Date(timeIntervalSince1970: 0)
    }
}

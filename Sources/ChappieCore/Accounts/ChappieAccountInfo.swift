/// Who an account is, as its id_token says: never a secret.
public struct ChappieAccountInfo: Sendable, Hashable, Codable {
    /// The e-mail address of the user.
    public var email: String?
    /// The ChatGPT user id (`chatgpt_user_id`, else `user_id`).
    public var userID: String?
    /// The ChatGPT account (workspace) id, sent as `ChatGPT-Account-Id`.
    public var accountID: String?
    /// The plan.
    public var plan: ChappiePlan?
    /// Whether requests must carry `X-OpenAI-Fedramp: true`.
    public var isFedRAMPAccount: Bool

    /// Creates account information.
    public init(email: String?, userID: String?, accountID: String?, plan: ChappiePlan?, isFedRAMPAccount: Bool = false) {
        self.email = email
        self.userID = userID
        self.accountID = accountID
        self.plan = plan
        self.isFedRAMPAccount = isFedRAMPAccount
    }
}

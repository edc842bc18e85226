import Foundation

/// Everything the emulator remembers: accounts, device codes, tokens, faults and counters.
actor EmulatorState {
    struct DeviceCode {
        var deviceAuthID: String
        var userCode: String
        var createdAt: Double
        var expiresAt: Double
        var accountID: String?
        var authorizationCode: String?
        var codeVerifier: String
        /// Why the user refused the code, once they did.
        var denial: String?
    }

    struct AuthorizationCode {
        var accountID: String
        var challenge: String
        var expiresAt: Double
        var redeemed = false
        /// The browser flow's `redirect_uri`, which the exchange must repeat; `nil` for a device code.
        var redirectURI: String? = nil
    }

    /// What the browser's visit to `/oauth/authorize` ends in.
    enum AuthorizeResult: Sendable {
        case approved(code: String)
        case denied(error: String, description: String)
    }

    enum RefreshState { case active, redeemed, revoked }

    struct RefreshToken {
        var accountID: String
        var family: String
        var expiresAt: Double
        var state: RefreshState
        var presentations = 0
    }

    struct AccessToken {
        var accountID: String
        var family: String
        var expiresAt: Double
        var revoked = false
    }

    /// Tokens handed out by a code exchange or a refresh.
    struct TokenSet: Sendable {
        var idToken: String
        var accessToken: String
        var refreshToken: String
        var expiresIn: Int
    }

    enum PollResult: Sendable {
        case pending
        case approved(authorizationCode: String, challenge: String, verifier: String)
        case denied(String)
        case expired
        case unknown
    }

    enum ExchangeResult: Sendable {
        case tokens(TokenSet)
        case invalidGrant(String)
    }

    enum RefreshResult: Sendable {
        case tokens(TokenSet)
        case reused, expired, revoked, unknown
    }

    enum AuthResult: Sendable {
        case account(EmulatedAccount)
        case expired, invalid
    }

    private let configuration: EmulatorConfiguration
    private let mint = TokenMint()
    private var accounts: [String: EmulatedAccount] = [:]
    private var accountOrder: [String] = []
    private var deviceCodes: [String: DeviceCode] = [:]
    private var authorizationCodes: [String: AuthorizationCode] = [:]
    private var refreshTokens: [String: RefreshToken] = [:]
    private var accessTokens: [String: AccessToken] = [:]
    private var revokedFamilies: Set<String> = []
    private var faults: [Fault] = []
    /// Identities the next auto-approved device codes sign in as, in order.
    private var nextApprovals: [(email: String?, plan: String?, accountID: String?, userID: String?)] = []
    /// The refusal the next browser authorization ends in, if one is queued.
    private var nextAuthorizeDenial: (error: String, description: String)?
    private var browserAuthorizations = 0

    private var requestCounts: [String: Int] = [:]
    private var clientPorts: Set<Int> = []
    private var refreshRedemptions = 0
    private var revocations = 0
    private var refreshRejections = 0
    private var reuseDetected = 0
    private var codeRedemptions = 0
    private var codeRejections = 0
    private var deviceCodesIssued = 0
    private var deviceCodesApproved = 0
    private var responsesStreamed = 0
    /// Tokens of the turns served, by account and UTC day (`yyyy-MM-dd`), and turns by account
    /// (`wham/profiles/me`).
    private var dailyTokens: [String: [String: Int]] = [:]
    /// Requests by their `originator` header ("none" without one).
    private var originators: [String: Int] = [:]
    /// Requests by their `User-Agent`'s product (`chappie/0.1.0`, `codex_cli_rs/0.163.0`, …).
    private var userAgents: [String: Int] = [:]
    /// The second TLS listener's origin, which an account's `wham/accounts/check` may name.
    private(set) var regionalOrigin: String?
    /// Requests that arrived at the second listener, by path.
    private var regionalRequests: [String: Int] = [:]
    /// Responses requests (HTTP and WebSocket upgrades) by their `x-openai-account-routing-override`.
    private var routingOverrideHeaders: [String: Int] = [:]
    private var turnsServed: [String: Int] = [:]
    /// Webhook bodies received (`/_emulator/webhooks`), every attempt counted, and failures still due.
    private var webhooks: [Data] = []
    private var webhookAttempts = 0
    private var webhookFailuresDue = 0
    private var dripsStarted = 0
    private var dripsCompleted = 0
    private var dripsAborted = 0
    private var streamsAborted = 0
    private var webSocketCounts: [WebSocketEvent: Int] = [:]
    private var droppedTurns: [String: Bool] = [:]
    private var encodedBodies: [String: Int] = [:]
    /// Reset-credit redemptions by `redeem_request_id`, with the outcome each got.
    private var redemptions: [String: String] = [:]
    /// Redemptions by outcome (a retry answered from `redemptions` is not counted again).
    private var resetCreditRedemptions: [String: Int] = [:]
    /// The options of the last turn request (never its text): what a test checks on the wire.
    private var lastTurnOptions: JSON = .null
    private var toolScripts = ToolScripts()

    init(configuration: EmulatorConfiguration) {
        self.configuration = configuration
    }

    private var now: Double { Date().timeIntervalSince1970 }

    // MARK: Device codes (§1)

    func createDeviceCode() -> (DeviceCode, interval: Int) {
        deviceCodesIssued += 1
        let code = DeviceCode(
            deviceAuthID: "deviceauth_" + mint.randomString(length: 26, alphabet: "0123456789ABCDEFGHJKMNPQRSTVWXYZ"),
            userCode: mint.randomString(length: 4, alphabet: "ABCDEFGHJKLMNPQRSTUVWXYZ") + "-"
                + mint.randomString(length: 5, alphabet: "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"),
            createdAt: now, expiresAt: now + configuration.deviceCodeLifetime.seconds,
            codeVerifier: mint.randomToken(byteCount: 32))
        deviceCodes[code.deviceAuthID] = code
        return (code, configuration.deviceCodePollInterval)
    }

    func pollDeviceCode(deviceAuthID: String, userCode: String) -> PollResult {
        guard var code = deviceCodes[deviceAuthID], code.userCode == userCode else { return .unknown }
        guard now < code.expiresAt else { return .expired }
        if let denial = code.denial { return .denied(denial) }
        if code.accountID == nil && configuration.autoApprove && now >= code.createdAt + configuration.autoApproveDelay.seconds {
            let next = nextApprovals.isEmpty ? (nil, nil, nil, nil) : nextApprovals.removeFirst()
            let account = makeAccount(email: next.0, plan: next.1, accountID: next.2, userID: next.3, isFedRAMP: false)
            code.accountID = account.accountID
            deviceCodesApproved += 1
        }
        guard let accountID = code.accountID else {
            deviceCodes[deviceAuthID] = code
            return .pending
        }
        let authorizationCode = code.authorizationCode ?? "ac_" + mint.randomToken()
        if code.authorizationCode == nil {
            code.authorizationCode = authorizationCode
            authorizationCodes[authorizationCode] = AuthorizationCode(
                accountID: accountID, challenge: TokenMint.pkceChallenge(verifier: code.codeVerifier),
                expiresAt: now + 600)
        }
        deviceCodes[deviceAuthID] = code
        return .approved(
            authorizationCode: authorizationCode, challenge: TokenMint.pkceChallenge(verifier: code.codeVerifier),
            verifier: code.codeVerifier)
    }

    enum ApproveError: Error { case unknownCode, expired }

    /// Approves the device code with this user code as the named (or a new) account.
    func approve(
        userCode: String, email: String?, plan: String?, accountID: String?, userID: String?, isFedRAMP: Bool
    ) throws(ApproveError) -> EmulatedAccount {
        guard let key = deviceCodes.first(where: { $0.value.userCode == userCode })?.key, var code = deviceCodes[key] else {
            throw .unknownCode
        }
        guard now < code.expiresAt else { throw .expired }
        let account = makeAccount(email: email, plan: plan, accountID: accountID, userID: userID, isFedRAMP: isFedRAMP)
        if code.accountID == nil { deviceCodesApproved += 1 }
        code.accountID = account.accountID
        deviceCodes[key] = code
        return account
    }

    /// Refuses the device code with this user code, as a user who clicks "Deny" would.
    func deny(userCode: String, reason: String) throws(ApproveError) {
        guard let key = deviceCodes.first(where: { $0.value.userCode == userCode })?.key, var code = deviceCodes[key] else {
            throw .unknownCode
        }
        guard now < code.expiresAt else { throw .expired }
        code.denial = reason
        code.accountID = nil
        deviceCodes[key] = code
    }

    /// Queues the identity the next auto-approved device code signs in as.
    func queueApproval(email: String?, plan: String?, accountID: String?, userID: String?) {
        nextApprovals.append((email, plan, accountID, userID))
    }

    /// The account with this id, email, or a new one.
    private func makeAccount(email: String?, plan: String?, accountID: String?, userID: String?, isFedRAMP: Bool) -> EmulatedAccount {
        if let existing = accountOrder.lazy.compactMap({ self.accounts[$0] }).first(where: {
            (accountID != nil && $0.accountID == accountID) || (accountID == nil && email != nil && $0.email == email)
        }) {
            var account = existing
            if let plan { account.plan = plan }
            accounts[account.accountID] = account
            return account
        }
        let number = accountOrder.count + 1
        let plans = ["plus", "pro", "team"]
        let start = Int(now)
        let account = EmulatedAccount(
            accountID: accountID ?? mint.uuid(),
            userID: userID ?? "user-" + mint.randomString(length: 16, alphabet: "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"),
            email: email ?? "user\(number)@example.com",
            plan: plan ?? plans[(number - 1) % plans.count],
            isFedRAMP: isFedRAMP, codexIncluded: true,
            fiveHour: .init(usedPercent: 0, seconds: OpenAIProtocol.fiveHourWindow, resetAt: start + OpenAIProtocol.fiveHourWindow),
            weekly: .init(usedPercent: 0, seconds: OpenAIProtocol.weeklyWindow, resetAt: start + OpenAIProtocol.weeklyWindow))
        accounts[account.accountID] = account
        accountOrder.append(account.accountID)
        return account
    }

    // MARK: Browser sign-in (§2)

    /// The user approves the browser sign-in at once (as the next queued identity, else a new
    /// account) unless a refusal was queued: an authorization code bound to the PKCE challenge and
    /// the redirect URI.
    func authorize(challenge: String, redirectURI: String) -> AuthorizeResult {
        if let denial = nextAuthorizeDenial {
            nextAuthorizeDenial = nil
            return .denied(error: denial.error, description: denial.description)
        }
        let next = nextApprovals.isEmpty ? (nil, nil, nil, nil) : nextApprovals.removeFirst()
        let account = makeAccount(email: next.0, plan: next.1, accountID: next.2, userID: next.3, isFedRAMP: false)
        let code = "ac_" + mint.randomToken()
        authorizationCodes[code] = AuthorizationCode(
            accountID: account.accountID, challenge: challenge, expiresAt: now + 600, redirectURI: redirectURI)
        browserAuthorizations += 1
        return .approved(code: code)
    }

    /// Makes the next browser authorization end in `error` (such as `access_denied`).
    func denyNextAuthorization(error: String, description: String) {
        nextAuthorizeDenial = (error, description)
    }

    // MARK: Tokens (§1.4, §3)

    /// Redeems an authorization code once, with the verifier of its challenge; a browser code also
    /// needs the `redirect_uri` its authorization used, a device code the issuer's device callback
    /// (`deviceRedirectAllowed`).
    /// - Parameter issuer: The origin the request came to, which the tokens name in `iss`.
    func exchange(code: String, verifier: String, redirectURI: String, deviceRedirectAllowed: Bool, issuer: String) -> ExchangeResult {
        guard var grant = authorizationCodes[code], !grant.redeemed, now < grant.expiresAt else {
            codeRejections += 1
            return .invalidGrant("Invalid authorization code")
        }
        guard grant.redirectURI.map({ $0 == redirectURI }) ?? deviceRedirectAllowed else {
            codeRejections += 1
            return .invalidGrant("redirect_uri does not match.")
        }
        guard TokenMint.pkceChallenge(verifier: verifier) == grant.challenge else {
            codeRejections += 1
            return .invalidGrant("Invalid code verifier")
        }
        grant.redeemed = true
        authorizationCodes[code] = grant
        codeRedemptions += 1
        return .tokens(issueTokens(accountID: grant.accountID, family: mint.randomToken(byteCount: 12), issuer: issuer))
    }

    func refresh(token: String, issuer: String) -> RefreshResult {
        guard var record = refreshTokens[token] else {
            refreshRejections += 1
            return .unknown
        }
        record.presentations += 1
        refreshTokens[token] = record
        if revokedFamilies.contains(record.family) || record.state == .revoked {
            refreshRejections += 1
            return .revoked
        }
        if record.state == .redeemed {
            // A second redemption: the whole family is revoked, as the real service does.
            reuseDetected += 1
            refreshRejections += 1
            revokeFamily(record.family)
            return .reused
        }
        guard now < record.expiresAt else {
            refreshRejections += 1
            return .expired
        }
        record.state = .redeemed
        refreshTokens[token] = record
        refreshRedemptions += 1
        return .tokens(issueTokens(accountID: record.accountID, family: record.family, issuer: issuer))
    }

    /// Revokes a refresh token's family, or one access token (RFC 7009: unknown tokens are ignored).
    func revoke(token: String) {
        revocations += 1
        if let record = refreshTokens[token] {
            revokeFamily(record.family)
        } else if accessTokens[token] != nil {
            accessTokens[token]?.revoked = true
        }
    }

    private func revokeFamily(_ family: String) {
        revokedFamilies.insert(family)
        for (token, record) in refreshTokens where record.family == family {
            refreshTokens[token]?.state = .revoked
        }
        for (token, record) in accessTokens where record.family == family {
            accessTokens[token]?.revoked = true
        }
    }

    private func issueTokens(accountID: String, family: String, issuer: String) -> TokenSet {
        let account = accounts[accountID]!
        let issuedAt = Int(now)
        let accessExpiry = now + configuration.accessTokenLifetime.seconds
        let authClaims = JSON.object([
            ("chatgpt_plan_type", .string(account.plan)),
            ("chatgpt_account_id", .string(account.accountID)),
            ("chatgpt_user_id", .string(account.userID)),
            ("user_id", .string(account.userID)),
            ("chatgpt_account_is_fedramp", .bool(account.isFedRAMP)),
            (
                "organizations",
                .array([
                    .object([
                        ("id", .string("org-" + account.accountID.prefix(12).replacingOccurrences(of: "-", with: ""))),
                        ("is_default", .bool(true)), ("role", .string("owner")), ("title", .string("Personal")),
                    ])
                ])
            ),
        ])
        let idToken = mint.jwt(
            claims: .object([
                ("iss", .string(issuer)),
                ("aud", .array([.string(OpenAIProtocol.clientID)])),
                ("sub", .string("auth0|" + account.userID)),
                ("email", .string(account.email)),
                ("email_verified", .bool(true)),
                ("iat", .int(issuedAt)),
                ("exp", .int(issuedAt + 3600)),
                ("jti", .string(mint.uuid())),
                (OpenAIProtocol.authClaim, authClaims),
            ]))
        let accessToken = mint.jwt(
            claims: .object([
                ("iss", .string(issuer)),
                ("aud", .array([.string("https://api.openai.com/v1")])),
                ("client_id", .string(OpenAIProtocol.clientID)),
                ("iat", .int(issuedAt)),
                ("exp", .int(Int(accessExpiry.rounded(.down)))),
                ("jti", .string(mint.uuid())),
                ("scp", .array(["openid", "profile", "email", "offline_access"].map(JSON.string))),
                (OpenAIProtocol.authClaim, authClaims),
                (OpenAIProtocol.profileClaim, .object([("email", .string(account.email)), ("email_verified", .bool(true))])),
            ]))
        let refreshToken = "rt_" + mint.randomToken(byteCount: 32)
        refreshTokens[refreshToken] = RefreshToken(
            accountID: accountID, family: family, expiresAt: now + configuration.refreshTokenLifetime.seconds, state: .active)
        accessTokens[accessToken] = AccessToken(accountID: accountID, family: family, expiresAt: accessExpiry.rounded(.down))
        return TokenSet(
            idToken: idToken, accessToken: accessToken, refreshToken: refreshToken,
            expiresIn: Int(configuration.accessTokenLifetime.seconds))
    }

    // MARK: Backend (§6, §8)

    /// Requests a `hold` fault keeps waiting, by a number of their own, until ``release()``.
    private var held: [Int: CheckedContinuation<Void, Never>] = [:]
    private var holds = 0

    /// Waits until ``release()``, or two minutes at most: a test that forgot to release must not
    /// keep the emulator from stopping.
    func hold() async {
        holds += 1
        let number = holds
        Task {
            try? await Task.sleep(for: .seconds(120))
            self.held.removeValue(forKey: number)?.resume()
        }
        await withCheckedContinuation { held[number] = $0 }
    }

    /// Lets every held request go on; how many there were.
    func release() -> Int {
        let waiting = held.values
        held = [:]
        waiting.forEach { $0.resume() }
        return waiting.count
    }

    /// The key set at the discovery document's `jwks_uri`.
    var jwks: JSON { mint.jwks }

    /// A JWT of this payload, signed with the issuer's key.
    func sign(payload: Data) -> String { mint.jwt(payload: payload) }

    func authenticate(bearer: String) -> AuthResult {
        guard let record = accessTokens[bearer], !record.revoked, var account = accounts[record.accountID] else {
            return .invalid
        }
        guard now < record.expiresAt else { return .expired }
        account.fiveHour.roll(now: Int(now))
        account.weekly.roll(now: Int(now))
        accounts[account.accountID] = account
        return .account(account)
    }

    /// Uses one response's worth of both windows; returns the account after the charge.
    func charge(accountID: String) -> EmulatedAccount? {
        guard var account = accounts[accountID] else { return nil }
        account.fiveHour.usedPercent = min(100, account.fiveHour.usedPercent + configuration.primaryCostPerResponse)
        account.weekly.usedPercent = min(100, account.weekly.usedPercent + configuration.secondaryCostPerResponse)
        if let left = account.turnsBeforeLimit {
            // The turn that uses the last one is served; the next is refused at the limit.
            account.turnsBeforeLimit = left - 1
            if left <= 1 {
                account.fiveHour.usedPercent = 100
                account.turnsBeforeLimit = nil
            }
        }
        accounts[accountID] = account
        responsesStreamed += 1
        return account
    }

    /// Sets the second TLS listener's origin, once it listens.
    func setRegionalOrigin(_ origin: String) {
        regionalOrigin = origin
    }

    /// Notes who sent a request (`originator`), which listener it came to (the `Host` it names),
    /// and, for the Responses path, its routing header.
    func note(path: String, originator: String?, userAgent: String?, routingOverride: String?, authority: String?) {
        originators[originator ?? "none", default: 0] += 1
        userAgents[userAgent.map { String($0.prefix { $0 != " " }) } ?? "none", default: 0] += 1
        if let regionalOrigin, let authority, regionalOrigin.hasSuffix("//" + authority) { regionalRequests[path, default: 0] += 1 }
        if path.hasSuffix("/codex/responses"), let routingOverride { routingOverrideHeaders[routingOverride, default: 0] += 1 }
    }

    /// Takes a webhook delivery: kept, unless a failure is due (then `false`, and it is counted).
    func receiveWebhook(_ body: Data) -> Bool {
        webhookAttempts += 1
        if webhookFailuresDue > 0 {
            webhookFailuresDue -= 1
            return false
        }
        webhooks.append(body)
        return true
    }

    /// The webhook bodies received, oldest first.
    func webhookBodies() -> [Data] { webhooks }

    /// The next `count` webhook deliveries are answered 503.
    func failWebhooks(_ count: Int) { webhookFailuresDue = count }

    /// Counts a turn's tokens for its account, on today's UTC date.
    func recordTokens(accountID: String, tokens: Int, at date: Date = Date()) {
        let day = date.formatted(.iso8601.year().month().day())
        dailyTokens[accountID, default: [:]][day, default: 0] += tokens
        turnsServed[accountID, default: 0] += 1
    }

    /// An account's tokens by day, oldest first, and how many turns it had.
    func tokenHistory(accountID: String) -> (days: [(day: String, tokens: Int)], turns: Int) {
        let days = (dailyTokens[accountID] ?? [:]).sorted { $0.key < $1.key }.map { (day: $0.key, tokens: $0.value) }
        return (days, turnsServed[accountID] ?? 0)
    }

    // MARK: Control API

    func account(id: String) -> EmulatedAccount? {
        accounts[id]
    }

    func allAccounts() -> [EmulatedAccount] {
        accountOrder.compactMap { accounts[$0] }
    }

    func setUsage(
        accountID: String, fiveHour: Double?, weekly: Double?, plan: String?, codexIncluded: Bool?, limitAfterTurns: Int? = nil
    ) -> EmulatedAccount? {
        guard var account = accounts[accountID] else { return nil }
        if let fiveHour { account.fiveHour.usedPercent = max(0, min(100, fiveHour)) }
        // After the use given: `limit_after_turns: 0` fills the window whatever else is set.
        if let limitAfterTurns {
            account.turnsBeforeLimit = limitAfterTurns
            if limitAfterTurns == 0 { account.fiveHour.usedPercent = 100 }
        }
        if let weekly { account.weekly.usedPercent = max(0, min(100, weekly)) }
        if let plan { account.plan = plan }
        if let codexIncluded { account.codexIncluded = codexIncluded }
        accounts[accountID] = account
        return account
    }

    /// Grants an account `count` reset credits, valid for 30 days.
    func grantResetCredits(accountID: String, count: Int) -> EmulatedAccount? {
        guard var account = accounts[accountID] else { return nil }
        let now = Int(Date().timeIntervalSince1970)
        for index in 0..<count {
            account.resetCredits.append(
                .init(id: "rlrc_\(accountID.prefix(8))_\(account.resetCredits.count + index)", grantedAt: now, expiresAt: now + 30 * 86_400))
        }
        accounts[accountID] = account
        return account
    }

    /// Redeems a reset credit (`consume`): the outcome a `redeem_request_id` got is kept, so a retry
    /// with the same id gets the same answer and redeems nothing twice.
    func consumeResetCredit(accountID: String, creditID: String?, requestID: String) -> String {
        if let earlier = redemptions[requestID] { return earlier }
        guard var account = accounts[accountID] else { return "no_credit" }
        let now = Int(Date().timeIntervalSince1970)
        let outcome: String
        let index = account.resetCredits.firstIndex { creditID == nil ? $0.status == "available" && $0.expiresAt > now : $0.id == creditID }
        if let index, account.resetCredits[index].status == "redeemed" {
            outcome = "already_redeemed"
        } else if let index, account.resetCredits[index].expiresAt > now {
            if account.limitReached || account.fiveHour.usedPercent > 0 || account.weekly.usedPercent > 0 {
                account.resetCredits[index].status = "redeemed"
                account.fiveHour.usedPercent = 0
                account.weekly.usedPercent = 0
                outcome = "reset"
            } else {
                outcome = "nothing_to_reset"
            }
        } else {
            outcome = "no_credit"
        }
        accounts[accountID] = account
        redemptions[requestID] = outcome
        resetCreditRedemptions[outcome, default: 0] += 1
        return outcome
    }

    /// Sets an account's workspace routing; `origin` `nil` is the emulator's own.
    func setRouting(accountID: String, override: String, origin: String?) -> EmulatedAccount? {
        guard var account = accounts[accountID] else { return nil }
        account.routingOverride = override
        account.workspaceOrigin = origin
        accounts[accountID] = account
        return account
    }

    func addFault(_ fault: Fault) {
        faults.append(fault)
    }

    func clearFaults() {
        faults.removeAll()
    }

    /// Counts the request (and its connection) and hands out the first fault meant for its path and
    /// scope, if any.
    func admit(path: String, clientPort: Int?, scope: Fault.Scope = .http) -> Fault.Kind? {
        if scope != .webSocketTurn { requestCounts[path, default: 0] += 1 }
        if let clientPort { clientPorts.insert(clientPort) }
        guard let index = faults.firstIndex(where: { $0.kind.scope.applies(to: scope) && ($0.pathPrefix.map(path.hasPrefix) ?? true) }) else {
            return nil
        }
        let kind = faults[index].kind
        faults[index].remaining -= 1
        if faults[index].remaining <= 0 { faults.remove(at: index) }
        return kind
    }

    enum DripEvent { case started, completed, aborted, streamAborted }

    /// What happened on the WebSocket endpoint.
    enum WebSocketEvent: String, CaseIterable { case opened, refused, turns, replays, turnsAborted = "turns_aborted" }

    func record(_ event: WebSocketEvent) {
        webSocketCounts[event, default: 0] += 1
    }

    /// Keeps the options of a turn request (§8.1): model, whether instructions came, the input
    /// messages' roles, reasoning effort, service tier and the tools' types. No text is kept.
    func recordTurnOptions(_ fields: [String: JSONInput]) {
        func string(_ value: JSONInput?) -> JSON {
            if case .string(let text)? = value { .string(text) } else { .null }
        }
        var roles: [JSON] = []
        if case .array(let items)? = fields["input"] {
            for case .object(let item) in items where item["type"] == nil || item["type"] == .string("message") {
                roles.append(string(item["role"]))
            }
        }
        var tools: [JSON] = []
        if case .array(let items)? = fields["tools"] {
            for case .object(let tool) in items { tools.append(string(tool["type"])) }
        }
        var effort: JSON = .null
        if case .object(let reasoning)? = fields["reasoning"] { effort = string(reasoning["effort"]) }
        let instructions: Bool = if case .string(let text)? = fields["instructions"] { !text.isEmpty } else { false }
        lastTurnOptions = .object([
            ("model", string(fields["model"])), ("instructions", .bool(instructions)), ("roles", .array(roles)),
            ("reasoning_effort", effort), ("service_tier", string(fields["service_tier"])), ("tool_types", .array(tools)),
        ])
    }

    /// A request body arrived with this `Content-Encoding` (and was decoded).
    func recordEncoding(_ encoding: String) {
        encodedBodies[encoding.lowercased(), default: 0] += 1
    }

    /// A WebSocket turn closed early by a fault: its replay (the same request on the same session)
    /// will be counted, and reworded when `divergent`.
    func rememberDroppedTurn(_ key: String, divergent: Bool) {
        droppedTurns[key] = divergent
    }

    /// Whether `key` replays a dropped turn that is to diverge (a replay is counted).
    func takeDroppedTurn(_ key: String) -> Bool {
        guard let divergent = droppedTurns.removeValue(forKey: key) else { return false }
        record(.replays)
        return divergent
    }

    func record(_ event: DripEvent) {
        switch event {
        case .started: dripsStarted += 1
        case .completed: dripsCompleted += 1
        case .aborted: dripsAborted += 1
        case .streamAborted: streamsAborted += 1
        }
    }

    /// Every counter, for tests to assert on (no token appears in it).
    func stats() -> JSON {
        let maxPresentations = refreshTokens.values.map(\.presentations).max() ?? 0
        let presentedTwice = refreshTokens.values.filter { $0.presentations > 1 }.count
        return .object([
            (
                "refresh",
                .object([
                    ("redemptions", .int(refreshRedemptions)),
                    ("rejections", .int(refreshRejections)),
                    ("reuse_detected", .int(reuseDetected)),
                    ("max_presentations_per_token", .int(maxPresentations)),
                    ("tokens_presented_more_than_once", .int(presentedTwice)),
                    ("revocations", .int(revocations)),
                ])
            ),
            (
                "authorization_code",
                .object([
                    ("redemptions", .int(codeRedemptions)),
                    ("rejections", .int(codeRejections)),
                ])
            ),
            (
                "device_codes",
                .object([
                    ("issued", .int(deviceCodesIssued)),
                    ("approved", .int(deviceCodesApproved)),
                    ("browser_authorizations", .int(browserAuthorizations)),
                ])
            ),
            ("responses_streamed", .int(responsesStreamed)),
            ("originators", .counts(originators)),
            ("user_agents", .counts(userAgents)),
            (
                "routing",
                .object([
                    ("regional_origin", regionalOrigin.map { .string($0) } ?? .null),
                    ("regional_requests", .counts(regionalRequests)),
                    ("override_headers", .counts(routingOverrideHeaders)),
                ])
            ),
            ("streams_aborted", .int(streamsAborted)),
            (
                "drips",
                .object([
                    ("started", .int(dripsStarted)),
                    ("completed", .int(dripsCompleted)),
                    ("aborted", .int(dripsAborted)),
                ])
            ),
            (
                "websocket",
                .object(
                    WebSocketEvent.allCases.map {
                        ($0.rawValue, .int(webSocketCounts[$0] ?? 0))
                    })
            ),
            (
                "tool_scripts",
                .object([
                    ("queued", .int(toolScripts.queued)),
                    ("calls_issued", .int(toolScripts.callsIssued)),
                    ("outputs_accepted", .int(toolScripts.outputsAccepted)),
                    ("outputs_refused", .int(toolScripts.outputsRefused)),
                    ("last_declared_tools", .array(toolScripts.declaredTools.map(JSON.string))),
                ])
            ),
            ("encoded_request_bodies", .counts(encodedBodies)),
            ("last_turn", lastTurnOptions),
            ("reset_credit_redemptions", .counts(resetCreditRedemptions)),
            ("webhook_attempts", .int(webhookAttempts)),
            ("connections", .int(clientPorts.count)),
            ("requests", .counts(requestCounts)),
            ("held", .int(held.count)),
        ])
    }

    // MARK: Scripted tool calls

    /// Queues a turn that calls a tool (see ``ToolScripts``).
    func queueToolScript(_ script: ToolScripts.Script) {
        toolScripts.enqueue(script)
    }

    /// Drops the queued scripts (calls already issued can still be answered).
    func clearToolScripts() {
        toolScripts.clear()
    }

    /// A new call in place of `callID` for a divergent replay (see ``ToolScripts/reissue(for:conversation:replacing:)``).
    func reissueToolCall(for input: JSONInput?, conversation: JSONInput?, replacing callID: String) -> ToolScripts.Step? {
        toolScripts.reissue(for: input, conversation: conversation, replacing: callID)
    }

    /// What the scripted model does with a request, or `nil` for the usual echo.
    func toolStep(for input: JSONInput?, conversation: JSONInput?, tools: JSONInput?, continuing: Bool) -> ToolScripts.Step? {
        toolScripts.step(for: input, conversation: conversation, tools: tools, continuing: continuing)
    }
}

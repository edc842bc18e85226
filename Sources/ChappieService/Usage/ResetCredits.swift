import ChappieText
package import Chappie
public import ChappieCore
package import ChappieNet
package import ChappieStore
public import Foundation

/// An account's banked rate-limit resets (`chappie credits`): listed, and redeemed one at a time on
/// request. Nothing is ever redeemed by itself.
///
/// The service's shapes are not documented; what chappie reads is in docs/protocol.md, "Reset
/// credits": a list, bare or as `credits` (with `available_count`), of `{id, status, expires_at, …}`;
/// a redemption `{redeem_request_id, credit_id}` answered by one of four outcomes.
///
/// ```swift
/// let credits = try await services.credits.list(account)
/// let outcome = try await services.credits.redeem(account)
/// ```
public struct ResetCreditsService: Sendable {
    /// One banked reset.
    public struct Credit: Sendable, Hashable, Codable {
        /// The service's id of it.
        public var id: String
        /// `available`, `redeemed`, `expired`, …
        public var status: String
        /// What it resets, as the service names it ("Full reset (Weekly + 5 hr)").
        public var title: String?
        /// When it was granted.
        public var grantedAt: Date?
        /// When it stops being usable.
        public var expiresAt: Date?

        /// Whether it can be redeemed now.
        public func isAvailable(at now: Date = Date()) -> Bool {
            status == "available" && (expiresAt.map { $0 > now } ?? true)
        }
    }

    /// What a redemption did (the service's four outcomes).
    public enum Outcome: String, Sendable, Codable, CaseIterable {
        /// The windows were reset.
        case reset
        /// Nothing was used: the credit was kept.
        case nothingToReset = "nothing_to_reset"
        /// No credit was available.
        case noCredit = "no_credit"
        /// That credit (or that request) was redeemed already.
        case alreadyRedeemed = "already_redeemed"
    }

    let store: any AccountStore
    let tokens: TokenService
    let http: ChappieHTTPClient

    package init(store: any AccountStore, tokens: TokenService, http: ChappieHTTPClient) {
        self.store = store
        self.tokens = tokens
        self.http = http
    }

    /// The account's credits, soonest to expire first.
    ///
    /// - Throws: ``ServiceError`` when the service does not answer or answers what chappie cannot read.
    public func list(_ account: Account) async throws -> [Credit] {
        let response = try await send(account) {
            ChappieHTTPRequest(url: tokens.oauth.endpoints.resetCreditsURL, headers: ["Accept": "application/json"])
        }
        guard let credits = Self.credits(response.body) else {
            throw ServiceError(.unavailable, "the reset-credit list of \(account.name) could not be read")
        }
        return credits.sorted { ($0.expiresAt ?? .distantFuture) < ($1.expiresAt ?? .distantFuture) }
    }

    /// Redeems the available credit that expires first, with a fresh idempotency key; a failed
    /// attempt (no answer, a 5xx) is tried again with the same key, so that one redemption is never
    /// made twice. The outcome is an audit entry.
    ///
    /// - Throws: ``ServiceError`` when no answer is had after the retries.
    public func redeem(_ account: Account, attempts: Int = 3) async throws -> Outcome {
        let credit = try await list(account).first { $0.isAvailable() }
        guard let credit else {
            try? await store.recordEvent(.creditRedeemed, account: account, detail: "no_credit: none available")
            return .noCredit
        }
        let key = UUID().uuidString.lowercased()
        let body = try JSONSerialization.data(withJSONObject: ["redeem_request_id": key, "credit_id": credit.id], options: [.sortedKeys])
        var lastError: (any Error)?
        for attempt in 1...max(1, attempts) {
            do {
                let response = try await send(account) {
                    var request = ChappieHTTPRequest(
                        url: tokens.oauth.endpoints.consumeResetCreditURL, method: .post, headers: ["Accept": "application/json"])
                    request.headers["Content-Type"] = "application/json"
                    request.body = body
                    return request
                }
                guard let outcome = Self.outcome(response.body) else {
                    throw ServiceError(.unavailable, "the answer to redeeming a credit of \(account.name) could not be read")
                }
                try? await store.recordEvent(.creditRedeemed, account: account, detail: "\(outcome.rawValue): credit \(credit.id) (request \(key))")
                return outcome
            } catch let error as ServiceError where error.code == .unavailable && attempt < attempts {
                lastError = error
                try await Task.sleep(for: .seconds(attempt))
            }
        }
        throw lastError ?? ServiceError(.unavailable, "redeeming a credit of \(account.name) got no answer")
    }

    /// Sends a request with the account's token (refreshed first when it expires within 5 minutes,
    /// and once more after a 401); a 429, a 5xx or no answer is `.unavailable`, another failure
    /// `.invalidInput`.
    private func send(_ account: Account, _ make: () -> ChappieHTTPRequest) async throws -> ChappieHTTPResponse {
        try await tokens.send(for: account, over: http, to: "the reset-credit endpoint", make)
    }

    /// The list, bare or as `credits`; `nil` when it is neither. Entries without an id are skipped.
    package static func credits(_ body: Data) -> [Credit]? {
        let object = try? JSONSerialization.jsonObject(with: body)
        let list = (object as? [Any]) ?? ((object as? [String: Any]).flatMap { $0["credits"] is NSNull ? [] : $0["credits"] as? [Any] })
        guard let list else { return nil }
        return list.prefix(1000).compactMap { item in
            guard let entry = item as? [String: Any], let id = entry["id"] as? String, !id.isEmpty, id.count <= 200 else { return nil }
            func text(_ key: String) -> String? { (entry[key] as? String).map { String(TerminalText.sanitized($0).prefix(200)) } }
            func date(_ key: String) -> Date? {
                if let seconds = WireNumber.date(entry[key]) { return seconds }
                return (entry[key] as? String).flatMap(WireNumber.date(iso8601:))
            }
            return Credit(
                id: TerminalText.sanitized(id), status: text("status") ?? "unknown", title: text("title"), grantedAt: date("granted_at"),
                expiresAt: date("expires_at"))
        }
    }

    /// The outcome of a redemption: a bare string, or `outcome`, `code` or `result` (itself a string
    /// or holding `outcome`); only the four known outcomes count.
    package static func outcome(_ body: Data) -> Outcome? {
        let object = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])
        var value: Any? = object
        if let dictionary = object as? [String: Any] {
            value = dictionary["outcome"] ?? dictionary["code"] ?? dictionary["result"]
            if let nested = value as? [String: Any] { value = nested["outcome"] }
        }
        return (value as? String).flatMap(Outcome.init(rawValue:))
    }
}

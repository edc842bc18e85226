public import Foundation

/// What chappie reads from an id_token or access_token: who the account is and when the token
/// expires. Reading claims checks no signature; `TokenSignatures` (Chappie module) does, where a
/// token comes from outside chappie's own exchange (docs/security.md, "Signatures").
///
/// ```swift
/// let claims = try TokenClaims(jwt: idToken)
/// print(claims.account.email ?? "-", claims.expiresAt ?? .distantFuture)
/// ```
public struct TokenClaims: Sendable, Hashable {
    /// The account the token speaks for.
    public var account: ChappieAccountInfo
    /// The `exp` claim, when present and a time between 1970 and 9999.
    public var expiresAt: Date?
    /// The `iat` claim, likewise.
    public var issuedAt: Date?

    private static let authNamespace = "https://api.openai.com/auth"
    private static let profileNamespace = "https://api.openai.com/profile"

    /// Decodes the claims of a compact JWT (`header.payload.signature`).
    ///
    /// - Throws: ``TokenClaimsError`` when the text is not a JWT or its payload is not a JSON object.
    ///   The error never contains the token.
    public init(jwt: String) throws(TokenClaimsError) {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[1].isEmpty else { throw .notAJWT(parts: parts.count) }
        guard let payload = Base64URL.decode(parts[1]) else { throw .invalidBase64 }
        guard let object = (try? JSONSerialization.jsonObject(with: payload)) as? [String: Any] else { throw .payloadNotJSONObject }
        let auth = object[Self.authNamespace] as? [String: Any] ?? [:]
        let profile = object[Self.profileNamespace] as? [String: Any] ?? [:]
        account = ChappieAccountInfo(
            email: object["email"] as? String ?? profile["email"] as? String,
            userID: auth["chatgpt_user_id"] as? String ?? auth["user_id"] as? String,
            accountID: auth["chatgpt_account_id"] as? String,
            plan: (auth["chatgpt_plan_type"] as? String).map(ChappiePlan.init(rawValue:)),
            isFedRAMPAccount: auth["chatgpt_account_is_fedramp"] as? Bool ?? false)
        // A time that is not finite or lies outside 1970–9999 is unknown, never stored as given.
        expiresAt = WireNumber.date(object["exp"])
        issuedAt = WireNumber.date(object["iat"])
    }
}

/// A token is not a readable JWT. The description never contains the token.
public enum TokenClaimsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not three dot-separated parts with a payload.
    case notAJWT(parts: Int)
    /// The payload is not base64url.
    case invalidBase64
    /// The payload is not a JSON object.
    case payloadNotJSONObject

    /// What is wrong.
    public var description: String {
        switch self {
        case .notAJWT(let parts): "not a JWT (expected 3 dot-separated parts, found \(parts))"
        case .invalidBase64: "not a JWT (the payload is not base64url)"
        case .payloadNotJSONObject: "not a JWT (the payload is not a JSON object)"
        }
    }
}

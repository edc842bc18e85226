public import Foundation

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

package import Foundation

/// The three tokens of an account. Held as `String`s because HTTP needs them so; they are sealed at
/// rest and never logged.
package struct Credentials: Sendable, Equatable, Codable {
    /// The id_token JWT (who the account is).
    package var idToken: String
    /// The access_token JWT (the bearer token).
    package var accessToken: String
    /// The refresh token (rotating, single use).
    package var refreshToken: String

    /// Creates credentials.
    package init(idToken: String, accessToken: String, refreshToken: String) {
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
    package var accessTokenExpiresAt: Date? { (try? TokenClaims(jwt: accessToken))?.expiresAt }
}

extension Credentials: RedactedDescription {
    /// Every token redacted.
    package var redactedFields: KeyValuePairs<String, String> {
        ["idToken": redactedMarker, "accessToken": redactedMarker, "refreshToken": redactedMarker]
    }
}

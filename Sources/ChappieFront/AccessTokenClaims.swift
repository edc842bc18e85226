import ChappieSystem

/// The one claim the front binary reads from an access token: `exp`, from the JWT's payload,
/// without checking the signature (as the full binary's expiry check does not).
package enum AccessTokenClaims {
    /// The latest `exp` the full binary accepts: 9999-12-31T23:59:59Z.
    static let latestExpiry: Double = 253_402_300_799

    /// `exp` in whole seconds since 1970; `nil` when the token is not three dot-separated parts
    /// with a base64url JSON object in the middle, or `exp` is missing, not a whole number, or out
    /// of range (then the full binary decides).
    package static func expiry(of token: String) -> Int64? {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[1].isEmpty,
            let payload = Sealing.base64Decoded(Array(parts[1]), urlSafe: true),
            let claims = JSONValue.parse(payload), case .object = claims, let exp = claims["exp"]?.number,
            exp >= 0, exp <= latestExpiry, exp == exp.rounded(.towardZero)
        else { return nil }
        return Int64(exp)
    }
}

internal import CSodium
import Foundation

/// The random values of an OAuth sign-in through the browser (docs/protocol.md §2): a PKCE
/// verifier and its S256 challenge, and a `state`, all base64url without padding.
public struct PKCE: Sendable {
    /// 64 random bytes, base64url: sent only with the code exchange.
    public let verifier: String
    /// base64url(SHA-256(verifier)): sent with the authorization request.
    public let challenge: String
    /// 32 random bytes, base64url: the callback must carry it back.
    public let state: String

    /// Fresh values from libsodium's random source.
    ///
    /// - Throws: ``SecureRandomUnavailable`` with `sodium_init`'s status when libsodium, and with it
    ///   the random source, could not be set up (its `randombytes_buf` reports nothing afterwards).
    public init() throws(SecureRandomUnavailable) {
        guard Sodium.initialisation >= 0 else { throw SecureRandomUnavailable(status: Sodium.initialisation) }
        verifier = Self.randomBase64URL(byteCount: 64)
        challenge = Self.challenge(for: verifier)
        state = Self.randomBase64URL(byteCount: 32)
    }

    /// The S256 challenge of a verifier.
    public static func challenge(for verifier: String) -> String {
        base64URL(Sodium.sha256(Array(verifier.utf8)))
    }

    /// `byteCount` random bytes from libsodium, base64url: a secret for a URL or a cookie.
    public static func randomBase64URL(byteCount: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: byteCount)
        randombytes_buf(&bytes, byteCount)
        return base64URL(bytes)
    }

    private static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// The system's random source could not be used: `status` is what the system call returned.
public struct SecureRandomUnavailable: Error, Sendable {
    /// The failing call's status.
    public let status: Int32
}

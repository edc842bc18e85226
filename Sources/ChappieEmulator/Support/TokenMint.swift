import CSodium
import Foundation

/// Makes the emulator's random identifiers and HS256-signed JWTs.
///
/// The real issuer signs with RS256; chappie never verifies signatures (it reads claims, as Codex
/// does), so the emulator signs with a per-process HMAC key and checks tokens by looking them up.
struct TokenMint: Sendable {
    private let key: [UInt8]

    init() {
        precondition(sodium_init() >= 0, "sodium_init failed")
        key = TokenMint.randomBytes(Int(crypto_auth_hmacsha256_KEYBYTES))
    }

    /// `count` random bytes from libsodium.
    static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        randombytes_buf(&bytes, count)
        return bytes
    }

    /// A random base64url string carrying `byteCount` bytes of entropy.
    func randomToken(byteCount: Int = 24) -> String {
        Base64URL.encode(TokenMint.randomBytes(byteCount))
    }

    /// A random string of `length` characters drawn from `alphabet`.
    func randomString(length: Int, alphabet: String) -> String {
        let characters = Array(alphabet)
        return String((0..<length).map { _ in characters[Int(randombytes_uniform(UInt32(characters.count)))] })
    }

    /// A random RFC 4122 version-4 UUID in lower case, like ChatGPT account ids.
    func uuid() -> String {
        UUID().uuidString.lowercased()
    }

    /// base64url(SHA-256(verifier)): the PKCE S256 challenge.
    static func pkceChallenge(verifier: String) -> String {
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        let input = Array(verifier.utf8)
        crypto_hash_sha256(&digest, input, UInt64(input.count))
        return Base64URL.encode(digest)
    }

    /// A compact JWT: header `{"alg":"HS256","typ":"JWT","kid":"emulator"}`, the claims, an HMAC.
    func jwt(claims: JSON) -> String {
        let header = JSON.object([("alg", .string("HS256")), ("typ", .string("JWT")), ("kid", .string("emulator"))])
        let signingInput = Base64URL.encode(Array(header.serialized())) + "." + Base64URL.encode(Array(claims.serialized()))
        var mac = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_BYTES))
        let message = Array(signingInput.utf8)
        crypto_auth_hmacsha256(&mac, message, UInt64(message.count), key)
        return signingInput + "." + Base64URL.encode(mac)
    }
}

/// base64url without padding (RFC 4648 §5), as JWTs and PKCE use it.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

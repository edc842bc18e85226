import CSodium
import CryptoExtras
import Foundation

/// Makes the emulator's random identifiers and its RS256-signed JWTs.
///
/// As the real issuer does, it signs with an RSA key named by `kid` and publishes the public half
/// at its discovery document's `jwks_uri` (``jwks``), so chappie checks these signatures as it
/// checks the real ones. The key is made afresh for each process.
struct TokenMint: Sendable {
    private let key: _RSA.Signing.PrivateKey
    /// The key's id, in each token's header and in the key set.
    let keyID: String

    init() {
        precondition(sodium_init() >= 0, "sodium_init failed")
        key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
        keyID = "emulator-" + Base64URL.encode(TokenMint.randomBytes(6))
    }

    /// The key set (RFC 7517) holding the public key.
    var jwks: JSON {
        let primitives = try! key.publicKey.getKeyPrimitives()
        return .object([
            (
                "keys",
                .array([
                    .object([
                        ("kty", .string("RSA")), ("use", .string("sig")), ("alg", .string("RS256")), ("kid", .string(keyID)),
                        ("n", .string(Base64URL.encode(Array(primitives.modulus)))),
                        ("e", .string(Base64URL.encode(Array(primitives.publicExponent)))),
                    ])
                ])
            )
        ])
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

    /// A compact JWT: header `{"alg":"RS256","typ":"JWT","kid":KEY}`, the claims, the RSA signature.
    func jwt(claims: JSON) -> String {
        jwt(payload: claims.serialized())
    }

    /// A compact JWT over a payload as given (the control API's `/_emulator/sign`, for tests that
    /// need the issuer's signature on claims the issuer would never make).
    func jwt(payload: Data) -> String {
        let header = JSON.object([("alg", .string("RS256")), ("typ", .string("JWT")), ("kid", .string(keyID))])
        let signingInput = Base64URL.encode(Array(header.serialized())) + "." + Base64URL.encode(Array(payload))
        let signature = try! key.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
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

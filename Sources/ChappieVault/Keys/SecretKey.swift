internal import CSodium
import Foundation

/// A 32-byte XChaCha20-Poly1305 key, with a short public id that names it without revealing it.
public struct SecretKey: Sendable {
    /// The key length in bytes.
    public static let byteCount = 32

    /// The key bytes.
    public let bytes: SecretBytes
    /// 16 hex characters of a BLAKE2b hash of the key: stored next to what the key sealed, so a
    /// credential says which key it needs.
    public let id: String

    /// Wraps 32 secret bytes as a key.
    ///
    /// - Throws: ``VaultError/Code/invalidKey`` when the length is not 32.
    public init(bytes: SecretBytes) throws(VaultError) {
        guard bytes.count == Self.byteCount else {
            throw VaultError(.invalidKey, "a key has \(Self.byteCount) bytes, not \(bytes.count)")
        }
        self.init(checked: bytes)
    }

    private init(checked bytes: SecretBytes) {
        self.bytes = bytes
        var digest = [UInt8](repeating: 0, count: 8)
        bytes.withUnsafeBytes { key in
            _ = crypto_generichash(&digest, 8, key.bindMemory(to: UInt8.self).baseAddress!, UInt64(key.count), nil, 0)
        }
        // Not String(format:): that sets up a locale (ICU) on every start just to print 16 hex digits.
        id = digest.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// A new random key.
    public static func generate() -> SecretKey {
        SecretKey(checked: .random(count: byteCount))
    }

    /// The key as one line of base64 text, the format of key files.
    public func base64Line() -> SecretBytes {
        let text = bytes.unprotectedData()
        var encoded = Data(text.base64EncodedString().utf8)
        var copy = text
        copy.zeroize()
        defer { encoded.zeroize() }
        return SecretBytes(copying: encoded + Data("\n".utf8))
    }
}

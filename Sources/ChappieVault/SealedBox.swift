internal import CSodium
public import Foundation

/// A value sealed with XChaCha20-Poly1305: a random 24-byte nonce and the ciphertext with its tag.
///
/// The associated data is not stored: the caller names what the value belongs to (an account, a key
/// id) when sealing and again when opening, so a box copied to another record does not open.
///
/// ```swift
/// let box = SealedBox.seal(secret, key: key, associatedData: "credential:42:\(key.id)")
/// let secret = try box.open(key: key, associatedData: "credential:42:\(key.id)")
/// ```
///
/// - Warning: Never reuse a nonce with the same key; ``seal(_:key:associatedData:)`` draws a new
///   random one every time, which is safe for XChaCha20's 192-bit nonces.
public struct SealedBox: Sendable, Hashable {
    /// The nonce length in bytes.
    public static let nonceByteCount = 24
    /// The tag length in bytes.
    public static let tagByteCount = 16

    /// The nonce.
    public var nonce: Data
    /// The ciphertext followed by the 16-byte tag.
    public var ciphertext: Data

    /// Creates a box from stored parts.
    public init(nonce: Data, ciphertext: Data) {
        self.nonce = nonce
        self.ciphertext = ciphertext
    }

    /// Seals secret bytes under a key, bound to the associated data.
    public static func seal(_ plaintext: SecretBytes, key: SecretKey, associatedData: String) -> SealedBox {
        _ = Sodium.initialised
        var nonce = [UInt8](repeating: 0, count: nonceByteCount)
        randombytes_buf(&nonce, nonceByteCount)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + tagByteCount)
        var length: UInt64 = 0
        let ad = Array(associatedData.utf8)
        plaintext.withUnsafeBytes { message in
            key.bytes.withUnsafeBytes { keyBytes in
                _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    &ciphertext, &length,
                    message.bindMemory(to: UInt8.self).baseAddress!, UInt64(message.count),
                    ad, UInt64(ad.count), nil, nonce, keyBytes.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
        return SealedBox(nonce: Data(nonce), ciphertext: Data(ciphertext.prefix(Int(length))))
    }

    /// Opens the box.
    ///
    /// - Throws: ``VaultError/Code/openFailed`` when the key, the associated data or the bytes are not
    ///   the ones it was sealed with.
    public func open(key: SecretKey, associatedData: String) throws(VaultError) -> SecretBytes {
        guard nonce.count == Self.nonceByteCount, ciphertext.count >= Self.tagByteCount else {
            throw VaultError(.openFailed, "the sealed value is damaged (wrong nonce or ciphertext length)")
        }
        let ad = Array(associatedData.utf8)
        var status: Int32 = -1
        let plaintext = SecretBytes(count: ciphertext.count - Self.tagByteCount) { output in
            var length: UInt64 = 0
            status = ciphertext.withUnsafeBytes { sealed in
                nonce.withUnsafeBytes { nonceBytes in
                    key.bytes.withUnsafeBytes { keyBytes in
                        crypto_aead_xchacha20poly1305_ietf_decrypt(
                            output.bindMemory(to: UInt8.self).baseAddress!, &length, nil,
                            sealed.bindMemory(to: UInt8.self).baseAddress!, UInt64(sealed.count),
                            ad, UInt64(ad.count),
                            nonceBytes.bindMemory(to: UInt8.self).baseAddress!, keyBytes.bindMemory(to: UInt8.self).baseAddress!)
                    }
                }
            }
            if status != 0, let base = output.baseAddress { sodium_memzero(base, output.count) }
        }
        guard status == 0 else {
            throw VaultError(.openFailed, "the sealed value does not open with this key (wrong key, or the data was altered or moved)")
        }
        return plaintext
    }
}

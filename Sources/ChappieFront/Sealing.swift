import CSodium

/// The store's sealing, read side: XChaCha20-Poly1305 (IETF) with a 24-byte nonce before the
/// ciphertext and its tag, and the key's id, the first 8 bytes of its BLAKE2b hash in hex
/// (docs/security.md, "What is sealed"; a test holds the id to the vault's).
enum Sealing {
    static let nonceLength = 24
    static let tagLength = 16

    /// The plaintext of `sealed` (nonce ‖ ciphertext ‖ tag) under `associatedData`; `nil` when it does not open.
    static func open(_ sealed: [UInt8], associatedData: String, key: [UInt8]) -> [UInt8]? {
        guard key.count == 32, sealed.count >= nonceLength + tagLength else { return nil }
        var plaintext = [UInt8](repeating: 0, count: sealed.count - nonceLength - tagLength)
        var length: UInt64 = 0
        let ad = Array(associatedData.utf8)
        let result = sealed.withUnsafeBufferPointer { sealed in
            plaintext.withUnsafeMutableBufferPointer { plaintext in
                let nonce = sealed.baseAddress!
                return crypto_aead_xchacha20poly1305_ietf_decrypt(
                    plaintext.baseAddress, &length, nil, nonce + nonceLength, UInt64(sealed.count - nonceLength), ad, UInt64(ad.count), nonce, key)
            }
        }
        defer { sodium_memzero(&plaintext, plaintext.count) }
        guard result == 0 else { return nil }
        return Array(plaintext.prefix(Int(length)))
    }

    /// The key's id: 16 lower-case hex digits.
    static func keyID(_ key: [UInt8]) -> String {
        var hash = [UInt8](repeating: 0, count: 8)
        crypto_generichash(&hash, 8, key, UInt64(key.count), nil, 0)
        return hash.map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
        }.joined()
    }

    /// Standard base64 with padding (`base64url` without, for `urlSafe`), decoded to exactly
    /// `length` bytes when given; `nil` for anything else.
    static func base64Decoded(_ text: [UInt8], length: Int? = nil, urlSafe: Bool = false) -> [UInt8]? {
        var decoded = [UInt8](repeating: 0, count: text.count / 4 * 3 + 3)
        defer { sodium_memzero(&decoded, decoded.count) }
        var count = 0
        let variant = urlSafe ? sodium_base64_VARIANT_URLSAFE_NO_PADDING : sodium_base64_VARIANT_ORIGINAL
        let whole = text.withUnsafeBufferPointer { text in
            text.withMemoryRebound(to: CChar.self) { characters in
                var end: UnsafePointer<CChar>?
                let result = sodium_base642bin(&decoded, decoded.count, characters.baseAddress, characters.count, nil, &count, &end, variant)
                // Every character read: nothing after the base64.
                return result == 0 && end == characters.baseAddress.map { UnsafePointer($0) + characters.count }
            }
        }
        guard whole, length == nil || count == length else { return nil }
        return Array(decoded.prefix(count))
    }
}

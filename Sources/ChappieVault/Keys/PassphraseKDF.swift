internal import CSodium
public import Foundation

/// Argon2id parameters for turning a passphrase into a key; stored (they are not secret) next to the
/// data the key seals, so the same passphrase gives the same key again.
public struct PassphraseKDF: Sendable, Codable, Equatable {
    /// Always `argon2id13`.
    public var algorithm: String
    /// 16 random bytes.
    public var salt: Data
    /// Argon2id's operations limit.
    public var opsLimit: UInt64
    /// Argon2id's memory limit in bytes.
    public var memLimit: Int

    /// New parameters with a fresh salt and libsodium's "interactive" costs (64 MiB, 2 passes), so a
    /// command that needs the key stays quick.
    public static func fresh() -> PassphraseKDF {
        _ = Sodium.initialised
        var salt = [UInt8](repeating: 0, count: crypto_pwhash_argon2id_saltbytes())
        randombytes_buf(&salt, salt.count)
        return PassphraseKDF(
            algorithm: "argon2id13", salt: Data(salt),
            opsLimit: UInt64(crypto_pwhash_argon2id_opslimit_interactive()),
            memLimit: crypto_pwhash_argon2id_memlimit_interactive())
    }

    /// New parameters with a fresh salt and libsodium's "moderate" costs (256 MiB, 3 passes), for a
    /// file that leaves the machine (a backup), where guessing is offline and a second is fine.
    public static func freshForFiles() -> PassphraseKDF {
        var kdf = fresh()
        kdf.opsLimit = UInt64(crypto_pwhash_argon2id_opslimit_moderate())
        kdf.memLimit = crypto_pwhash_argon2id_memlimit_moderate()
        return kdf
    }

    /// Derives the key from a passphrase.
    ///
    /// - Throws: ``VaultError/Code/derivationFailed`` for unknown parameters or when Argon2id cannot
    ///   get its memory.
    public func deriveKey(from passphrase: SecretBytes) throws(VaultError) -> SecretKey {
        guard algorithm == "argon2id13", salt.count == crypto_pwhash_argon2id_saltbytes() else {
            throw VaultError(.derivationFailed, "unsupported key-derivation parameters (\(algorithm), \(salt.count)-byte salt)")
        }
        var status: Int32 = -1
        let bytes = SecretBytes(count: SecretKey.byteCount) { output in
            status = passphrase.withUnsafeBytes { password in
                salt.withUnsafeBytes { saltBytes in
                    crypto_pwhash(
                        output.bindMemory(to: UInt8.self).baseAddress!, UInt64(output.count),
                        password.bindMemory(to: CChar.self).baseAddress!, UInt64(password.count),
                        saltBytes.bindMemory(to: UInt8.self).baseAddress!, opsLimit, memLimit, crypto_pwhash_alg_argon2id13())
                }
            }
        }
        guard status == 0 else {
            throw VaultError(.derivationFailed, "Argon2id failed (it needs \(memLimit >> 20) MiB of memory)")
        }
        return try SecretKey(bytes: bytes)
    }
}

internal import CSodium

/// libsodium, initialised once for the process.
public enum Sodium {
    /// `sodium_init`'s result, run exactly once before any other libsodium call: 0 or 1 when the
    /// library (and its random source) can be used, -1 when it cannot.
    package static let initialisation: Int32 = sodium_init()

    /// The sealed store cannot work without libsodium: its users stop here when it failed.
    static let initialised: Void = {
        precondition(initialisation >= 0, "sodium_init failed: libsodium cannot be used")
    }()

    /// The version of the libsodium this process runs with, for example `1.0.18`.
    public static var version: String {
        _ = initialised
        return String(cString: sodium_version_string())
    }

    /// SHA-256 of `bytes` (`crypto_hash_sha256`).
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        _ = initialised
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        crypto_hash_sha256(&digest, bytes, UInt64(bytes.count))
        return digest
    }
}

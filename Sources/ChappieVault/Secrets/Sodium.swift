internal import CSodium

/// libsodium, initialised once for the process.
public enum Sodium {
    /// `sodium_init`, run exactly once before any other libsodium call.
    static let initialised: Void = {
        precondition(sodium_init() >= 0, "sodium_init failed: libsodium cannot be used")
    }()

    /// The version of the libsodium this process runs with, for example `1.0.18`.
    public static var version: String {
        _ = initialised
        return String(cString: sodium_version_string())
    }
}

import Foundation

/// Secrets handed to chappie in environment variables (`CHAPPIE_PASSPHRASE`,
/// `CHAPPIE_NEW_PASSPHRASE`): read once into ``SecretBytes`` and removed from the process
/// environment, so that no child process inherits them and no later `getenv` sees them.
public enum SecretEnvironment {
    /// Takes the variable's value out of the environment.
    ///
    /// - Returns: Its bytes, or `nil` when it is not set.
    public static func take(_ name: String) -> SecretBytes? {
        guard let value = getenv(name) else { return nil }
        let length = strlen(value)
        let secret = SecretBytes(count: length) { buffer in
            buffer.copyMemory(from: UnsafeRawBufferPointer(start: value, count: length))
        }
        unsetenv(name)
        return secret
    }
}

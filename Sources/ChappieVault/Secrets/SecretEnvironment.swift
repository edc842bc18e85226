import CProcess
import Foundation

/// Secrets given in the environment, taken out of it: read once into locked memory, overwritten
/// where they were, and removed, so that neither a child process nor a reader of
/// `/proc/PID/environ` finds them.
public enum SecretEnvironment {
    /// Takes the variable's value out of the environment.
    ///
    /// `unsetenv` only drops the variable from `environ`: its bytes stay in the block the kernel
    /// shows as `/proc/PID/environ` for the process's whole life. They are overwritten first.
    ///
    /// - Returns: Its bytes, or `nil` when it is not set.
    public static func take(_ name: String) -> SecretBytes? {
        guard let value = getenv(name) else { return nil }
        let length = strlen(value)
        let secret = SecretBytes(count: length) { buffer in
            buffer.copyMemory(from: UnsafeRawBufferPointer(start: value, count: length))
        }
        memset(value, 0, length)
        unsetenv(name)
        return secret
    }
}

/// What chappie does to its own process before it touches a secret.
public enum ProcessHardening {
    /// Makes the process non-dumpable: no core file, and no other process of the same user (a
    /// command `lease run` or `exec` started, say) may attach to it or read its memory or
    /// environment in `/proc`. Children are dumpable again once they run another program.
    public static func apply() {
        _ = chappie_process_set_dumpable(0)
    }

}

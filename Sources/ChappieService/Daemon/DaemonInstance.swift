public import ChappieStore
public import Foundation

/// The claim one daemon holds on a data directory for its whole life: a `flock` the kernel drops
/// when the process ends, so a second daemon started at the same moment cannot also run, and a
/// crashed daemon never blocks the next one. The directory stays claimed while this is alive.
public struct DaemonInstance: Sendable {
    private let lock: FileLock

    /// The lock file in a data directory.
    public static func lockURL(in location: StoreLocation) -> URL {
        location.directory.appendingPathComponent("locks/daemon.lock")
    }

    /// Claims the data directory for this process.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` naming the running daemon's pid when another
    ///   daemon holds it; ``StoreError`` when the lock file cannot be used.
    public static func claim(in location: StoreLocation) throws -> DaemonInstance {
        let url = lockURL(in: location)
        guard let lock = try FileLock.tryAcquire(url) else {
            let pid = FileLock.recorded(at: url).map { " (pid \($0.trimmingCharacters(in: .whitespacesAndNewlines)))" } ?? ""
            throw ServiceError(
                .invalidInput, "a chappie daemon is already running for \(location.directory.path)\(pid); stop it first, or use another --home")
        }
        lock.record("\(getpid())\n")
        return DaemonInstance(lock: lock)
    }
}

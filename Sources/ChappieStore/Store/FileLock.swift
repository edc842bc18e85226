import ChappieCore
public import Foundation
import Logging

/// An advisory lock (`flock`) on a file, released when dropped or when the process dies.
///
/// Several chappie processes (and the daemon) take the same account's lock before redeeming its
/// refresh token, so that it is redeemed once; the key lock is taken shared around a redemption and
/// exclusive around a key rotation; the daemon holds its data directory's lock for its life.
public final class FileLock: Sendable {
    /// Whether others may hold the lock at the same time.
    public enum Mode: Sendable {
        /// One holder at a time.
        case exclusive
        /// Any number of shared holders, while nobody holds it exclusive.
        case shared

        var operation: Int32 { self == .exclusive ? LOCK_EX : LOCK_SH }
    }

    private let descriptor: Int32
    /// The lock file.
    public let url: URL

    private init(descriptor: Int32, url: URL) {
        self.descriptor = descriptor
        self.url = url
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    /// Lock waits, at debug level (`--verbose`): which lock, who holds it, how long it took.
    private static let logger = Logger(label: "chappie.lock")

    /// Logs that a lock is held by someone else and is being waited for.
    private static func logWaiting(_ url: URL, _ mode: Mode) {
        logger.debug(
            "waiting for a lock",
            metadata: [
                "lock": "\(url.path)", "mode": "\(mode == .exclusive ? "exclusive" : "shared")",
                "holder": "\(recorded(at: url).map { String($0.prefix(80)) } ?? "unknown")",
            ])
    }

    /// Logs how long a lock that had to be waited for took.
    private static func logTaken(_ url: URL, after waited: Duration) {
        logger.debug("lock taken", metadata: ["lock": "\(url.path)", "waited_ms": "\(waited.wholeMilliseconds)"])
    }

    /// Takes the lock, waiting at most `timeout`; creates the file 0600 (and its directory 0700).
    ///
    /// - Throws: ``StoreError`` `.io` when the file cannot be opened or the lock is not had in time.
    public static func acquire(_ url: URL, mode: Mode = .exclusive, timeout: Duration = .seconds(60)) async throws -> FileLock {
        try await acquire(url, mode: mode, timeout: timeout, clock: ContinuousClock())
    }

    /// ``acquire(_:mode:timeout:)`` timed by `clock` (a test's, which moves when the test says).
    package static func acquire<C: Clock<Duration>>(_ url: URL, mode: Mode = .exclusive, timeout: Duration, clock: C) async throws -> FileLock {
        let descriptor = try openLockFile(url)
        let started = clock.now
        let deadline = started.advanced(by: timeout)
        var pause = Duration.milliseconds(2)
        var waited = false
        while !(try take(descriptor, mode, url)) {
            if !waited {
                waited = true
                logWaiting(url, mode)
            }
            guard clock.now < deadline else {
                close(descriptor)
                throw StoreError(.unavailable, "\(url.path) stayed locked for \(timeout) by another chappie process; try again shortly")
            }
            do {
                try await clock.sleep(for: pause)
            } catch {
                close(descriptor)
                throw error
            }
            pause = min(pause * 2, .milliseconds(50))
        }
        if waited { logTaken(url, after: started.duration(to: clock.now)) }
        return FileLock(descriptor: descriptor, url: url)
    }

    /// An account's refresh lock. Its holder may be waiting up to ``RefreshBounds/answerTimeout``
    /// for the issuer, so a wait that ends says so, as a temporary failure (exit code 75).
    public static func acquireRefreshLock(_ url: URL, timeout: Duration = .seconds(60)) async throws -> FileLock {
        do {
            return try await acquire(url, timeout: timeout)
        } catch {
            guard (error as? StoreError)?.code == .unavailable else { throw error }
            throw StoreError(
                .unavailable,
                "a refresh of this account is in flight in another chappie process (the issuer has up to \(RefreshBounds.answerTimeout.components.seconds) s to answer it); try again shortly"
            )
        }
    }

    /// Takes the lock, blocking this thread at most `timeout` (for synchronous paths such as opening
    /// the store, which wait only for a short critical section of another process).
    ///
    /// - Throws: ``StoreError`` `.io` when the file cannot be opened or the lock is not had in time.
    public static func acquireBlocking(_ url: URL, mode: Mode = .exclusive, timeout: Duration = .seconds(60)) throws(StoreError) -> FileLock {
        let descriptor = try openLockFile(url)
        let clock = ContinuousClock()
        let started = clock.now
        let deadline = started + timeout
        var pause = 2
        var waited = false
        while !(try take(descriptor, mode, url)) {
            if !waited {
                waited = true
                logWaiting(url, mode)
            }
            guard clock.now < deadline else {
                close(descriptor)
                throw StoreError(.unavailable, "\(url.path) stayed locked for \(timeout) by another chappie process; try again shortly")
            }
            usleep(useconds_t(pause * 1000))
            pause = min(pause * 2, 50)
        }
        if waited { logTaken(url, after: clock.now - started) }
        return FileLock(descriptor: descriptor, url: url)
    }

    /// Takes the lock if nobody holds it in a conflicting mode; `nil` otherwise.
    ///
    /// - Throws: ``StoreError`` `.io` when the file cannot be opened or locked.
    public static func tryAcquire(_ url: URL, mode: Mode = .exclusive) throws(StoreError) -> FileLock? {
        let descriptor = try openLockFile(url)
        guard try take(descriptor, mode, url) else {
            close(descriptor)
            return nil
        }
        return FileLock(descriptor: descriptor, url: url)
    }

    /// Replaces the lock file's contents with `text` (such as the holder's pid), for messages.
    public func record(_ text: String) {
        ftruncate(descriptor, 0)
        let bytes = Array(text.utf8)
        _ = pwrite(descriptor, bytes, bytes.count, 0)
    }

    /// What the holder wrote with ``record(_:)``, read without taking the lock.
    public static func recorded(at url: URL) -> String? {
        (try? String(contentsOf: url, encoding: .utf8)).flatMap { $0.isEmpty ? nil : $0 }
    }

    private static func openLockFile(_ url: URL) throws(StoreError) -> Int32 {
        try? FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let descriptor = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(.io, "cannot open the lock file \(url.path): \(String(cString: strerror(errno)))")
        }
        return descriptor
    }

    /// One non-blocking attempt: `true` when taken, `false` when someone else holds it.
    private static func take(_ descriptor: Int32, _ mode: Mode, _ url: URL) throws(StoreError) -> Bool {
        if flock(descriptor, mode.operation | LOCK_NB) == 0 { return true }
        guard errno == EWOULDBLOCK || errno == EINTR else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw StoreError(.io, "cannot lock \(url.path): \(reason)")
        }
        return false
    }
}

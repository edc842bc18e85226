public import Foundation

/// An exclusive advisory lock (`flock`) on a file, released when dropped or when the process dies.
///
/// Several chappie processes (and the daemon) take the same account's lock before redeeming its
/// refresh token, so that it is redeemed once.
public final class FileLock: Sendable {
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

    /// Takes the lock, waiting at most `timeout`; creates the file 0600 (and its directory 0700).
    ///
    /// - Throws: ``StoreError`` `.io` when the file cannot be opened or the lock is not had in time.
    public static func acquire(_ url: URL, timeout: Duration = .seconds(60)) async throws -> FileLock {
        try? FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let descriptor = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(.io, "cannot open the lock file \(url.path): \(String(cString: strerror(errno)))")
        }
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var pause = Duration.milliseconds(2)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                close(descriptor)
                throw StoreError(.io, "cannot lock \(url.path): \(String(cString: strerror(errno)))")
            }
            guard clock.now < deadline else {
                close(descriptor)
                throw StoreError(.io, "\(url.path) stayed locked for \(timeout) by another chappie process")
            }
            do {
                try await Task.sleep(for: pause)
            } catch {
                close(descriptor)
                throw error
            }
            pause = min(pause * 2, .milliseconds(50))
        }
        return FileLock(descriptor: descriptor, url: url)
    }
}

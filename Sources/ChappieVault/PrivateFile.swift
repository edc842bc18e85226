public import Foundation

/// Files only their owner can read, written so that a crash leaves the old or the new contents,
/// never a mix: a 0600 temporary file beside the target, synced, renamed over it, directory synced.
public enum PrivateFile {
    /// Writes `bytes` to `url` atomically with mode 0600; the temporary copy is zeroed on failure.
    ///
    /// - Throws: ``VaultError/Kind/keyFile`` naming the file when it cannot be written.
    public static func write(_ bytes: SecretBytes, to url: URL) throws(VaultError) {
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw VaultError(.keyFile, "cannot write in \(directory.path): \(String(cString: strerror(errno)))")
        }
        let written = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, synced, rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw VaultError(.keyFile, "cannot write \(url.path): \(reason)")
        }
        syncDirectory(directory)
    }

    /// Renames `source` over `destination` and makes the rename durable.
    public static func move(_ source: URL, over destination: URL) throws(VaultError) {
        guard rename(source.path, destination.path) == 0 else {
            throw VaultError(.keyFile, "cannot rename \(source.path) to \(destination.path): \(String(cString: strerror(errno)))")
        }
        syncDirectory(destination.deletingLastPathComponent())
    }

    /// Makes renames in `directory` durable.
    public static func syncDirectory(_ directory: URL) {
        let descriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor >= 0 {
            fsync(descriptor)
            close(descriptor)
        }
    }
}

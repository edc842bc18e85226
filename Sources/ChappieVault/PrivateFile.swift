import CProcess
public import Foundation

/// Files only their owner can read, written so that a crash leaves the old or the new contents,
/// never a mix, and no partial copy: an unnamed 0600 file in the target's directory (O_TMPFILE),
/// written and synced, then given a temporary name and renamed over the target, directory synced.
/// Where the file system has no unnamed files, the temporary file is named from the start; either
/// way the next write in that directory removes temporary files a killed chappie left behind.
public enum PrivateFile {
    /// Writes `bytes` to `url` atomically with mode 0600. An existing target is replaced by the
    /// rename, never truncated or written in place; a link at `url` is replaced, not followed.
    ///
    /// - Throws: ``VaultError/Code/writeFailed`` naming the file when it cannot be written.
    public static func write(_ bytes: SecretBytes, to url: URL) throws(VaultError) {
        let directory = url.deletingLastPathComponent()
        removeStaleTemporaries(in: directory, of: url.lastPathComponent)
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        if !writeUnnamed(bytes, directory: directory, linkingAs: temporary) {
            try writeNamed(bytes, at: temporary, in: directory)
        }
        guard rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw VaultError(.writeFailed, "cannot write \(url.path): \(reason)")
        }
        syncDirectory(directory)
    }

    /// Writes into an unnamed file and links it as `name` once complete; `false` when the file
    /// system or kernel cannot (nothing is left behind then).
    private static func writeUnnamed(_ bytes: SecretBytes, directory: URL, linkingAs name: URL) -> Bool {
        let descriptor = chappie_process_open_unnamed(directory.path, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard writeAll(bytes, to: descriptor), fsync(descriptor) == 0 else { return false }
        // Through /proc, which needs no capability (AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH).
        return linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, name.path, AT_SYMLINK_FOLLOW) == 0
    }

    private static func writeNamed(_ bytes: SecretBytes, at temporary: URL, in directory: URL) throws(VaultError) {
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw VaultError(.writeFailed, "cannot write in \(directory.path): \(String(cString: strerror(errno)))")
        }
        let written = writeAll(bytes, to: descriptor) && fsync(descriptor) == 0
        close(descriptor)
        guard written else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw VaultError(.writeFailed, "cannot write \(temporary.path): \(reason)")
        }
    }

    private static func writeAll(_ bytes: SecretBytes, to descriptor: Int32) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }

    /// Removes the temporary files (`.NAME.PID.RANDOM.tmp`) that a chappie killed mid-write left in
    /// `directory`, those of processes no longer running: they may hold tokens or a key in clear.
    /// With `target`, only those of that file (in a directory of the user's, such as a Codex home
    /// or where a backup goes, other programs' files are never touched); without, every one (for
    /// chappie's own directories).
    public static func removeStaleTemporaries(in directory: URL, of target: String? = nil) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where name.hasPrefix(target.map { ".\($0)." } ?? ".") && name.hasSuffix(".tmp") {
            let parts = name.dropLast(".tmp".count).split(separator: ".")
            guard parts.count >= 3, let pid = pid_t(parts[parts.count - 2]), UInt32(parts[parts.count - 1]) != nil, pid > 0 else { continue }
            if pid != getpid(), kill(pid, 0) != 0, errno == ESRCH {
                var info = stat()
                // Only regular files of this user: never through a link, never another's.
                let path = directory.appendingPathComponent(name).path
                if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == getuid() { unlink(path) }
            }
        }
    }

    /// Renames `source` over `destination` and makes the rename durable.
    public static func move(_ source: URL, over destination: URL) throws(VaultError) {
        guard rename(source.path, destination.path) == 0 else {
            throw VaultError(.writeFailed, "cannot rename \(source.path) to \(destination.path): \(String(cString: strerror(errno)))")
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

package import Foundation

/// Keeps the data directory 0700 and the files in it 0600.
package enum FilePermissions {
    /// Creates the directory 0700, or narrows an existing one of ours to 0700.
    package static func ensurePrivateDirectory(_ directory: URL) throws(StoreError) {
        var info = stat()
        if stat(directory.path, &info) != 0 {
            do {
                try FileManager.default.createDirectory(
                    at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw StoreError(.io, "cannot create the directory \(directory.path): \(error.localizedDescription)")
            }
            return
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw StoreError(.io, "\(directory.path) is not a directory; choose another --home")
        }
        guard info.st_uid == getuid() else {
            throw StoreError(.io, "\(directory.path) belongs to another user; use a directory of your own (--home)")
        }
        if info.st_mode & 0o077 != 0, chmod(directory.path, 0o700) != 0 {
            throw StoreError(.io, "cannot make \(directory.path) private (chmod 700): \(String(cString: strerror(errno)))")
        }
    }

    /// Creates the file 0600 if missing, or narrows an existing one to 0600.
    package static func ensurePrivateFile(_ file: URL) throws(StoreError) {
        let descriptor = open(file.path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(.io, "cannot open \(file.path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var info = stat()
        fstat(descriptor, &info)
        if info.st_mode & 0o077 != 0, fchmod(descriptor, 0o600) != 0 {
            throw StoreError(.io, "cannot make \(file.path) private (chmod 600): \(String(cString: strerror(errno)))")
        }
    }
}

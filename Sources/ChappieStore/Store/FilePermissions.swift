import ChappieSystem
package import Foundation
import Logging

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
        guard info.st_uid == geteuid() else {
            throw StoreError(.io, "\(directory.path) belongs to another user; use a directory of your own (--home)")
        }
        // Others could have put a database, a socket or a link of their own in it: narrowing it
        // now would keep what they put there. Only read access is taken away silently.
        if let problem = PathOwnership.problem(info) {
            throw StoreError(
                .io,
                "\(directory.path) \(problem), who could have put files of their own in it; check what is in it, then run chmod 700 \(directory.path)"
            )
        }
        if info.st_mode & 0o077 != 0 {
            guard chmod(directory.path, 0o700) == 0 else {
                throw StoreError(.io, "cannot make \(directory.path) private (chmod 700): \(String(cString: strerror(errno)))")
            }
            // A directory's mode is never changed without saying so.
            Logger(label: "chappie").warning(
                "made \(directory.path) private: its mode was \(String(info.st_mode & 0o777, radix: 8)), now 700 (chappie keeps tokens there)")
        }
    }

    /// The names in a data directory that are chappie's own: one holding any of them is a data
    /// directory (``refuseForeignDirectory(_:)``).
    static let ownNames = [
        StoreDatabase.fileName, "chappie.key", "locks", "recovery", "store-url", "local-settings.json", "alerts-state.json", "codex-homes",
    ]

    /// Refuses a directory that is someone's home or a project, not a data directory: none of
    /// chappie's own names in it, and hidden entries (`.bashrc`, `.git`) that homes and checkouts
    /// have. `--home ~` (or a mistyped path that happens to exist) must not turn it into a store,
    /// made private and given a database and a key among its files. A directory holding only
    /// plain files (an `auth.json` to import) may become one.
    package static func refuseForeignDirectory(_ directory: URL) throws(StoreError) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path), !names.contains(where: ownNames.contains),
            names.contains(where: { $0.hasPrefix(".") })
        else { return }
        let hidden = names.filter { $0.hasPrefix(".") }.sorted()
        let shown = hidden.prefix(3).joined(separator: ", ") + (names.count > 3 ? ", …" : "")
        let standard = StoreLocation.resolve(home: nil).directory.path
        let home = ProcessInfo.processInfo.environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let suggestion = standard.hasPrefix(home + "/") ? "~" + standard.dropFirst(home.count) : standard
        throw StoreError(
            .io,
            "\(directory.path) is not a chappie data directory: it holds other files (\(shown)) and none of chappie's; nothing was changed. Did you mean --home \(suggestion)? Give a new or empty directory for a store of its own"
        )
    }

    /// Creates the file 0600 if missing, or narrows an existing one to 0600. A symbolic link or
    /// anything but a regular file is refused (``refuseLink(_:)``).
    package static func ensurePrivateFile(_ file: URL) throws(StoreError) {
        let descriptor = open(file.path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            if errno == ELOOP { throw linkRefusal(file) }
            throw StoreError(.io, "cannot open \(file.path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var info = stat()
        fstat(descriptor, &info)
        guard info.st_mode & S_IFMT == S_IFREG else { throw StoreError(.io, "\(file.path) is not a regular file; chappie will not use it") }
        if info.st_mode & 0o077 != 0, fchmod(descriptor, 0o600) != 0 {
            throw StoreError(.io, "cannot make \(file.path) private (chmod 600): \(String(cString: strerror(errno)))")
        }
    }

    /// Refuses a path of chappie's own (the database's WAL and shared memory, a recovery file or
    /// directory) that is a symbolic link: whoever placed it could point chappie's writes, a chmod
    /// or a new database at any file of the user's.
    package static func refuseLink(_ url: URL) throws(StoreError) {
        var info = stat()
        if lstat(url.path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK { throw linkRefusal(url) }
    }

    private static func linkRefusal(_ url: URL) -> StoreError {
        StoreError(
            .io, "\(url.path) is a symbolic link; chappie uses its own files only where they are, never through a link: put the file itself there")
    }
}

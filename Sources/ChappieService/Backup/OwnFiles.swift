import ChappieDaemonClient
package import ChappieStore
package import ChappieVault
package import Foundation

/// The files and directories chappie itself uses for one store, which no output of a command may
/// replace (a backup written over the database or the key in use loses every account). Compared
/// by device and inode after every link is resolved, never by the text of a path, which a symbolic
/// link or `..` makes say anything.
package struct OwnFiles: Sendable {
    /// Files: the database with its WAL and shared memory, every key file that may be in use, the
    /// team pool's address, the daemon's socket, a passphrase file.
    package var files: [URL]
    /// Directories nothing else is written into: the data directory and the default key directory,
    /// with everything below them (recovery files, locks, private Codex homes).
    package var directories: [URL]

    /// Those of a store at `location` whose key comes from `source`; `others` adds files a command
    /// reads (its passphrase file).
    package init(location: StoreLocation, source: KeySource?, environment: [String: String], others: [URL] = []) {
        let database = location.directory.appendingPathComponent(StoreDatabase.fileName).path
        var files = [database, database + "-wal", database + "-shm"].map(URL.init(fileURLWithPath:))
        files += [location.defaultKeyFile, location.directory.appendingPathComponent(StoreOptions.storeURLFileName)]
        files.append(DaemonClient.defaultSocket(in: location))
        let directories = [location.directory, location.keyDirectory]
        switch source {
        case .keyFile(let url)?, .systemdCredential(let url)?, .defaultKeyFile(let url)?:
            // The key file and the next key a rotation stages beside it, never the directory a user
            // chose for it: that may be their whole home.
            files += [url, KeyRotation.pendingURL(for: url)]
        case .passphrase?, nil: break
        }
        for name in ["CHAPPIE_KEY_FILE", "CHAPPIE_STORE_PASSWORD_FILE"] {
            if let path = environment[name], !path.isEmpty { files.append(URL(fileURLWithPath: (path as NSString).expandingTildeInPath)) }
        }
        if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
            files.append(URL(fileURLWithPath: directory).appendingPathComponent("chappie.key"))
        }
        self.files = files + others
        self.directories = directories
    }

    /// Why `target` may not be written, or `nil` when it may: it is (through any link) one of the
    /// files, or it would land inside one of the directories. A missing parent directory is said too.
    package func refusal(forWriting target: URL) -> String? {
        let parent = target.deletingLastPathComponent()
        guard let resolvedParent = Self.resolved(parent) else { return "the directory \(parent.path) does not exist" }
        // By device and inode, up every directory above the target: a bind mount or a link names
        // the same directory by another path.
        let own = Dictionary(
            directories.compactMap { directory in FileIdentity(directory.path).map { ($0, directory) } }, uniquingKeysWith: { first, _ in first })
        var current = resolvedParent
        while true {
            if let identity = FileIdentity(current), let directory = own[identity] {
                return "\(target.path) is inside chappie's own directory \(directory.path); write it elsewhere"
            }
            guard current != "/", !current.isEmpty else { break }
            current = (current as NSString).deletingLastPathComponent
        }
        var info = stat()
        if lstat(target.path, &info) == 0, info.st_mode & S_IFMT != S_IFREG, info.st_mode & S_IFMT != S_IFLNK {
            return "\(target.path) is not a regular file (a directory, socket, pipe or device); write to a file"
        }
        // By its directory and name too, for an own file not there yet (a rotation's staged key).
        let parentIdentity = FileIdentity(resolvedParent)
        if files.contains(where: {
            $0.lastPathComponent == target.lastPathComponent && FileIdentity($0.deletingLastPathComponent().path) == parentIdentity
        }) {
            return "\(target.path) is one of chappie's own data or key files; write it elsewhere"
        }
        guard let identity = FileIdentity(target.path) else { return nil }
        if stat(target.path, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
            return "\(target.path) leads to something that is not a regular file; write to a file"
        }
        if files.contains(where: { FileIdentity($0.path) == identity }) {
            return "\(target.path) is one of chappie's own data or key files; write it elsewhere"
        }
        return nil
    }

    /// The path with every link and `..` resolved, when it exists.
    private static func resolved(_ url: URL) -> String? {
        guard let pointer = realpath(url.path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}

/// A file's device and inode, following links: the same pair is the same file, whatever the path.
struct FileIdentity: Hashable {
    var device: UInt64
    var inode: UInt64

    init?(_ path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }
}

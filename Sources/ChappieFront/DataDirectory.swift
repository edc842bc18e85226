import Glibc

/// Where the store and its key file are, resolved as the full binary resolves them
/// (`--home`, `$CHAPPIE_HOME`, `$XDG_DATA_HOME/chappie`, `~/.local/share/chappie`), with the
/// file checks the front binary makes before it reads anything.
public struct DataDirectory: Sendable {
    /// The data directory.
    public let path: String
    /// The key file used when no other key source is given.
    public let keyFile: String

    /// The directory for `home` (`--home`, already `~`-expanded) in `environment`; `nil` when it
    /// cannot be told without Foundation (no usable `HOME`), which the full binary then works out.
    public init?(home: String?, environment: (String) -> String?) {
        if let home, !home.isEmpty {
            path = home
            keyFile = home + "/chappie.key"
            return
        }
        if let home = environment("CHAPPIE_HOME"), !home.isEmpty {
            guard let expanded = FrontRequest.expandingTilde(home, environment) else { return nil }
            path = expanded
            keyFile = expanded + "/chappie.key"
            return
        }
        guard let user = environment("HOME"), user.hasPrefix("/") else { return nil }
        let data = environment("XDG_DATA_HOME").flatMap { $0.hasPrefix("/") ? $0 : nil } ?? user + "/.local/share"
        let config = environment("XDG_CONFIG_HOME").flatMap { $0.hasPrefix("/") ? $0 : nil } ?? user + "/.config"
        path = data + "/chappie"
        keyFile = config + "/chappie/chappie.key"
    }

    /// The daemon's socket, unless `--socket` names another.
    public var socket: String { path + "/chappie.sock" }

    /// Whether something is at `path` (a link counts; it is not followed).
    func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    func isLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }

    /// A directory of this user's, mode 0700, not a link: as the full binary leaves it.
    func isPrivateDirectory(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR && info.st_uid == geteuid() && info.st_mode & 0o777 == 0o700
    }

    /// A regular file of this user's that group and others cannot reach, not a link.
    func isPrivateFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && info.st_uid == geteuid() && info.st_mode & 0o077 == 0
    }

    /// A file's bytes, not through a link, when it is at most `limit` bytes.
    static func contents(of path: String, limit: Int) -> [UInt8]? {
        let file = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { return bytes }
            bytes += buffer[0..<count]
            guard bytes.count <= limit else { return nil }
        }
    }

    /// Whether tokens wait in `recovery/` to be taken into the store (an earlier refresh could not
    /// commit them): the full binary's open takes them in first.
    func hasPendingRecovery() -> Bool {
        let recovery = path + "/recovery"
        guard let directory = opendir(recovery) else { return errno != ENOENT }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".sealed") { return true }
            if name.hasSuffix(".slot") {
                // A reserved slot starts with a zero byte until tokens are written into it.
                let slot = open(recovery + "/" + name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                guard slot >= 0 else { return true }
                defer { close(slot) }
                var first: UInt8 = 0
                guard read(slot, &first, 1) == 1, first == 0 else { return true }
            }
        }
        return false
    }
}

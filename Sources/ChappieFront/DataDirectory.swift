import CSodium
import Glibc

/// Where the store and its key file are, resolved as the full binary resolves them
/// (`--home`, `$CHAPPIE_HOME`, `$XDG_DATA_HOME/chappie`, `~/.local/share/chappie`), with the
/// file checks the front binary makes before it reads anything.
public struct DataDirectory: Sendable {
    /// The data directory.
    public let path: String
    /// The key file used when no other key source is given.
    public let keyFile: String

    /// The directory for `home` (`--home`) in `environment`; `nil` when the full binary is to work
    /// it out (a `~` path, or no usable `HOME`).
    public init?(home: String?, environment: (String) -> String?) {
        if let home, !home.isEmpty {
            guard let absolute = Self.absolute(home) else { return nil }
            path = absolute
            keyFile = absolute + "/chappie.key"
            return
        }
        if let home = environment("CHAPPIE_HOME"), !home.isEmpty {
            guard let absolute = FrontRequest.plainPath(home).flatMap(Self.absolute) else { return nil }
            path = absolute
            keyFile = absolute + "/chappie.key"
            return
        }
        guard let user = environment("HOME").flatMap(FrontRequest.plainPath), user.hasPrefix("/") else { return nil }
        let data = environment("XDG_DATA_HOME").flatMap { $0.hasPrefix("/") ? $0 : nil } ?? user + "/.local/share"
        let config = environment("XDG_CONFIG_HOME").flatMap { $0.hasPrefix("/") ? $0 : nil } ?? user + "/.config"
        path = data + "/chappie"
        keyFile = config + "/chappie/chappie.key"
    }

    /// `path` against the working directory when relative, as Foundation's file URLs take it (the
    /// socket path's length, limited to 107 bytes, is then the full binary's); `nil` without one.
    static func absolute(_ path: String) -> String? {
        guard !path.hasPrefix("/") else { return path }
        guard let directory = getcwd(nil, 0) else { return nil }
        defer { free(directory) }
        let base = String(cString: directory)
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }

    /// The daemon's socket, unless `--socket` names another.
    public var socket: String { path + "/chappie.sock" }

    /// Whether something is at `path` (a link counts; it is not followed).
    func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Nothing at `path`, or a regular file (not a link).
    func isRegularFileOrAbsent(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return errno == ENOENT }
        return info.st_mode & S_IFMT == S_IFREG
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
        // A key file's bytes pass through here.
        defer { sodium_memzero(&buffer, buffer.count) }
        while true {
            let count = buffer.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { return bytes }
            bytes += buffer[0..<count]
            guard bytes.count <= limit else { return nil }
        }
    }

    /// Whether a `.NAME.PID.RANDOM.tmp` left by a killed write is in the data directory, the key
    /// file's directory or `recovery/`: the full binary's open removes those (they may hold tokens
    /// or a key in clear), so it opens the store while any is there.
    func hasTemporaries() -> Bool {
        let keyDirectory = keyFile.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return [path, keyDirectory, path + "/recovery"].contains { directory in
            Self.names(in: directory).contains { $0.hasPrefix(".") && $0.hasSuffix(".tmp") }
        }
    }

    /// Whether a `.chappie-account` is in the working directory or any above it: which account it
    /// names, and whether to trust it, is the full binary's to say.
    static func hasAccountBinding() -> Bool {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        // Without a working directory the full binary decides too.
        guard getcwd(&buffer, buffer.count) != nil else { return true }
        var directory = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var info = stat()
        while true {
            if lstat((directory == "/" ? "" : directory) + "/.chappie-account", &info) == 0 || errno != ENOENT { return true }
            guard directory != "/" else { return false }
            directory = String(directory[..<(directory.lastIndex(of: "/") ?? directory.startIndex)])
            if directory.isEmpty { directory = "/" }
        }
    }

    /// The names in a directory; none when it cannot be read.
    static func names(in path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            names.append(withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) })
        }
        return names
    }

    /// Whether tokens wait in `recovery/` to be taken into the store (an earlier refresh could not
    /// commit them): the full binary's open takes them in first.
    func hasPendingRecovery() -> Bool {
        let recovery = path + "/recovery"
        var info = stat()
        guard lstat(recovery, &info) == 0 else { return errno != ENOENT }
        guard info.st_mode & S_IFMT == S_IFDIR else { return true }
        for name in Self.names(in: recovery) {
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

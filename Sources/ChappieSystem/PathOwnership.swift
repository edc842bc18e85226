public import Glibc

/// Whether another user can change a file or directory: the rule OpenSSH applies to
/// `authorized_keys`, and chappie to its data directory, the Codex homes it writes and the files it
/// trusts (a CA file). It must belong to this user (the effective uid, which owns what chappie
/// makes) or root, and be writable by nobody else. Group write is allowed for the user's private
/// group (a group named like the user with no other member, what a umask of 002 relies on).
public enum PathOwnership {
    /// What lets another user change it.
    public enum Problem: Equatable, Sendable, CustomStringConvertible {
        /// It belongs to this uid, neither this user nor root.
        case ownedByAnother(uid: UInt32)
        /// Every user can write it.
        case writableByAll
        /// Its group, which others belong to, can write it.
        case writableByGroup(gid: UInt32)

        /// The problem as a sentence's end: "… belongs to another user (uid 65534)".
        public var description: String {
            switch self {
            case .ownedByAnother(let uid): "belongs to another user (uid \(uid))"
            case .writableByAll: "can be written by every user"
            case .writableByGroup(let gid): "can be written by its group (gid \(gid))"
            }
        }

        /// The command that fixes it.
        public func fix(at path: String) -> String {
            switch self {
            case .ownedByAnother: "chown $(id -un) \(path)"
            case .writableByAll, .writableByGroup: "chmod go-w \(path)"
            }
        }
    }

    /// What lets another user change the file or directory `info` describes; `nil` when nothing does.
    ///
    /// - Parameter stickyAllowed: Whether a directory of root's with the sticky bit (`/tmp`) passes:
    ///   others may add names there but never replace or remove ours. Right for directories above a
    ///   path, never for the directory that holds chappie's own files.
    public static func problem(_ info: stat, stickyAllowed: Bool = false) -> Problem? {
        if info.st_uid != geteuid() && info.st_uid != 0 { return .ownedByAnother(uid: info.st_uid) }
        let isDirectory = info.st_mode & S_IFMT == S_IFDIR
        if info.st_mode & 0o002 != 0 {
            if stickyAllowed, isDirectory, info.st_uid == 0, info.st_mode & S_ISVTX != 0 { return nil }
            return .writableByAll
        }
        if info.st_mode & 0o020 != 0, info.st_gid != privateGroup { return .writableByGroup(gid: info.st_gid) }
        return nil
    }

    /// What lets another user change what is at `path` (a link followed, as opening it would);
    /// `nil` when nothing does or nothing is there.
    public static func problem(at path: String) -> Problem? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return problem(info)
    }

    /// The first place on the way to `path` that another user can change: the file itself, then
    /// every directory above it up to `/` (where root's sticky directories such as `/tmp` pass),
    /// both as named and with every link resolved, since whoever can write a directory holding a
    /// link can re-point it (the directories of a link met half-way, `/a/l → /b/l2 → /c`, are
    /// not looked at). `nil` when none can, or when nothing is there to resolve (the caller's read
    /// then fails with its own message).
    public static func firstProblem(onTheWayTo path: String) -> (path: String, problem: Problem)? {
        guard let real = realpath(path, nil) else { return nil }
        let resolved = String(cString: real)
        free(real)
        for start in [path, resolved] {
            var current = start
            var first = true
            while true {
                var info = stat()
                if stat(current, &info) == 0, let problem = problem(info, stickyAllowed: !first) { return (current, problem) }
                first = false
                guard current != "/", let slash = current.lastIndex(of: "/") else { break }
                current = slash == current.startIndex ? "/" : String(current[..<slash])
            }
        }
        return nil
    }

    /// This user's private group, if it has one: the user's own primary group, named like the
    /// user, with no other member. Looked up once, at the first use (`getpwuid` and `getgrgid`
    /// return shared buffers, so they are not called again from concurrent refreshes).
    private static let privateGroup: gid_t? = {
        let gid = getegid()
        guard let user = getpwuid(geteuid()), let group = getgrgid(gid) else { return nil }
        let name = String(cString: user.pointee.pw_name)
        guard name == String(cString: group.pointee.gr_name) else { return nil }
        var members = group.pointee.gr_mem
        while let member = members?.pointee {
            if String(cString: member) != name { return nil }
            members = members?.advanced(by: 1)
        }
        return gid
    }()
}

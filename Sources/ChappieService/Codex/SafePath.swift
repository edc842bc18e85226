import Foundation

/// Whether a path can be trusted not to change under chappie: the rule OpenSSH applies to
/// `authorized_keys`. The file and every directory above it must belong to this user or to root,
/// and be writable by nobody else. Two exceptions keep ordinary set-ups working: a directory owned
/// by root with the sticky bit (`/tmp`: others may add entries there, never replace ours), and
/// group write for the user's private group (a group named like the user with no other member,
/// what a umask of 002 relies on).
enum SafePath {
    /// Why `url` (which need not exist yet; its nearest existing ancestor is checked then) could be
    /// changed by another user, with the fix; `nil` when it cannot.
    static func refusal(_ url: URL) -> String? {
        var path = url.standardizedFileURL.path
        var isFile = true
        // The nearest part that exists: a home chappie is about to create is judged by its parent.
        var info = stat()
        while lstat(path, &info) != 0 {
            guard path != "/" else { return nil }
            path = (path as NSString).deletingLastPathComponent
            isFile = false
        }
        if isFile, info.st_mode & S_IFMT == S_IFLNK { return "\(path) is a symbolic link; chappie does not follow links to a Codex home's files" }
        // As OpenSSH does, a path that cannot be resolved is refused; and both the directories as
        // named (whoever can write one holding a link can re-point it) and as resolved are checked.
        guard let real = realpath(path, nil) else {
            return "\(path) cannot be resolved (\(String(cString: strerror(errno)))); use another Codex home"
        }
        let resolved = String(cString: real)
        free(real)
        // The sticky exception is for directories above the home: the home itself, sticky and open
        // to all, would let anyone add a config.toml or a lock file beside auth.json.
        let home = url.standardizedFileURL.deletingLastPathComponent().path
        var strict: Set<String> = [url.standardizedFileURL.path, home]
        if let real = realpath(home, nil) {
            strict.insert(String(cString: real))
            free(real)
        }
        let check = { (path: String) in refusal(ofDirectoryOrFile: path, stickyAllowed: !strict.contains(path)) }
        return ancestors(of: path).lazy.compactMap(check).first ?? ancestors(of: resolved).lazy.compactMap(check).first
    }

    /// `path` and every directory above it, up to `/`.
    private static func ancestors(of path: String) -> [String] {
        var paths = [path]
        while let last = paths.last, last != "/", !last.isEmpty { paths.append((last as NSString).deletingLastPathComponent) }
        return paths
    }

    private static func refusal(ofDirectoryOrFile path: String, stickyAllowed: Bool) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "\(path) cannot be examined (\(String(cString: strerror(errno)))); use another Codex home" }
        guard let problem = problem(with: info, stickyAllowed: stickyAllowed) else { return nil }
        return
            "\(path) \(problem), so another user could replace the Codex login there; fix it (\(fix(for: info, at: path))) or use another Codex home"
    }

    private static func problem(with info: stat, stickyAllowed: Bool) -> String? {
        let uid = getuid()
        if info.st_uid != uid && info.st_uid != 0 { return "belongs to another user (uid \(info.st_uid))" }
        let isDirectory = info.st_mode & S_IFMT == S_IFDIR
        if info.st_mode & 0o002 != 0 {
            // Root's sticky directories (/tmp): nobody else can rename or remove what is ours.
            if stickyAllowed, isDirectory, info.st_uid == 0, info.st_mode & S_ISVTX != 0 { return nil }
            return "can be written by every user"
        }
        if info.st_mode & 0o020 != 0, !isPrivateGroup(info.st_gid) { return "can be written by its group (gid \(info.st_gid))" }
        return nil
    }

    private static func fix(for info: stat, at path: String) -> String {
        if info.st_uid != getuid() && info.st_uid != 0 { return "chown $(id -un) \(path)" }
        return "chmod go-w \(path)"
    }

    static func isPrivateGroup(_ gid: gid_t) -> Bool {
        gid == privateGroup
    }

    /// This user's private group, if it has one: the user's own primary group, named like the
    /// user, with no other member. Looked up once, at the first use (`getpwuid` and `getgrgid`
    /// return shared buffers, so they are not called again from concurrent refreshes).
    private static let privateGroup: gid_t? = {
        let gid = getgid()
        guard let user = getpwuid(getuid()), let group = getgrgid(gid) else { return nil }
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

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
        guard let real = realpath(path, nil) else { return nil }
        var current = String(cString: real)
        free(real)
        while true {
            guard stat(current, &info) == 0 else { return nil }
            if let problem = problem(with: info) {
                return "\(current) \(problem), so another user could replace the Codex login there; fix it (\(fix(for: info, at: current))) or use another Codex home"
            }
            guard current != "/" else { return nil }
            current = (current as NSString).deletingLastPathComponent
        }
    }

    private static func problem(with info: stat) -> String? {
        let uid = getuid()
        if info.st_uid != uid && info.st_uid != 0 { return "belongs to another user (uid \(info.st_uid))" }
        let isDirectory = info.st_mode & S_IFMT == S_IFDIR
        if info.st_mode & 0o002 != 0 {
            // Root's sticky directories (/tmp): nobody else can rename or remove what is ours.
            if isDirectory, info.st_uid == 0, info.st_mode & S_ISVTX != 0 { return nil }
            return "can be written by every user"
        }
        if info.st_mode & 0o020 != 0, !isPrivateGroup(info.st_gid) { return "can be written by its group (gid \(info.st_gid))" }
        return nil
    }

    private static func fix(for info: stat, at path: String) -> String {
        if info.st_uid != getuid() && info.st_uid != 0 { return "chown $(id -un) \(path)" }
        return "chmod go-w \(path)"
    }

    /// Whether `gid` is this user's private group: the user's own primary group, named like the
    /// user, with no other member.
    private static func isPrivateGroup(_ gid: gid_t) -> Bool {
        guard gid == getgid(), let user = getpwuid(getuid()), let group = getgrgid(gid) else { return false }
        guard String(cString: user.pointee.pw_name) == String(cString: group.pointee.gr_name) else { return false }
        var members = group.pointee.gr_mem
        while let member = members?.pointee {
            if String(cString: member) != String(cString: user.pointee.pw_name) { return false }
            members = members?.advanced(by: 1)
        }
        return true
    }
}

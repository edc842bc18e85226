import ChappieSystem
import Foundation

/// Whether a Codex home's path can be trusted not to change under chappie: the file and every
/// directory above it pass ``PathOwnership``, where a directory above the home may also be root's
/// and sticky (`/tmp`: others may add entries there, never replace ours).
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
        guard let problem = PathOwnership.problem(info, stickyAllowed: stickyAllowed) else { return nil }
        return "\(path) \(problem), so another user could replace the Codex login there; fix it (\(problem.fix(at: path))) or use another Codex home"
    }
}

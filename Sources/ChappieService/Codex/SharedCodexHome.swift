import Foundation

/// What a private Codex home (`chappie exec`'s) shares with the user's own: every entry of it but
/// the login, linked, so that `codex resume` finds the sessions a command wrote, and `AGENTS.md`,
/// `prompts/` and the rest apply as in a plain `codex`.
///
/// Kept private: `auth.json` (the account's tokens, the point of the home), `config.toml` (made on
/// each run, pinning file storage for credentials), and lock files (Codex's and chappie's: a lock
/// shared between homes would serialise unrelated accounts). The links are chappie's own, made
/// and replaced only here, so reading through them is not following a link someone placed.
struct SharedCodexHome {
    /// The user's Codex home.
    let user: URL
    /// The private home.
    let home: URL

    /// Entries of the user's home that stay private.
    static func isPrivate(_ name: String) -> Bool {
        ["auth.json", "config.toml"].contains(name) || name.hasSuffix(".lock") || name.hasPrefix(".chappie-")
    }

    /// Links every shareable entry of the user's home into the private one, after moving the
    /// sessions a private `sessions/` holds from before into the user's, and what Codex made in the
    /// private home that the user's has not (`history.jsonl`, `log/`, …) over to it. An entry both
    /// have stays private; links whose entry the user removed go.
    func link() throws {
        try Self.makeDirectory(user)
        try Self.makeDirectory(user.appendingPathComponent("sessions"))
        try moveSessions()
        let fileManager = FileManager.default
        for name in try fileManager.contentsOfDirectory(atPath: home.path) where !Self.isPrivate(name) {
            let own = home.appendingPathComponent(name), theirs = user.appendingPathComponent(name)
            guard let kind = Self.kind(own.path), kind == S_IFREG || kind == S_IFDIR, Self.kind(theirs.path) == nil else { continue }
            if rename(own.path, theirs.path) != 0 {
                try fileManager.copyItem(at: own, to: theirs)
                try fileManager.removeItem(at: own)
            }
        }
        let shared = try fileManager.contentsOfDirectory(atPath: user.path).filter { !Self.isPrivate($0) }
        for name in shared {
            let link = home.appendingPathComponent(name).path, target = user.appendingPathComponent(name).path
            switch Self.kind(link) {
            case nil:
                try Self.symlink(target, at: link)
            case S_IFLNK?:
                if (try? fileManager.destinationOfSymbolicLink(atPath: link)) != target {
                    unlink(link)
                    try Self.symlink(target, at: link)
                }
            default:
                continue
            }
        }
        for name in try fileManager.contentsOfDirectory(atPath: home.path) where !shared.contains(name) {
            let link = home.appendingPathComponent(name).path
            if Self.kind(link) == S_IFLNK, let target = try? fileManager.destinationOfSymbolicLink(atPath: link),
                target.hasPrefix(user.path + "/")
            {
                unlink(link)
            }
        }
    }

    /// A private `sessions/` from before sharing: each session moves to the same place in the
    /// user's `sessions/` (one of that name there already stays, and so does this one, in
    /// `sessions.private`), then the directory gives way to the link. Anything there but files
    /// (a link, a socket) goes with the directory.
    private func moveSessions() throws {
        let own = home.appendingPathComponent("sessions")
        guard Self.kind(own.path) == S_IFDIR else { return }
        let fileManager = FileManager.default
        let target = user.appendingPathComponent("sessions")
        var leftOver = false
        for relative in try fileManager.subpathsOfDirectory(atPath: own.path).sorted() {
            let from = own.appendingPathComponent(relative), to = target.appendingPathComponent(relative)
            guard Self.kind(from.path) == S_IFREG else { continue }
            if Self.kind(to.path) != nil {
                leftOver = true
                continue
            }
            try Self.makeDirectory(to.deletingLastPathComponent())
            if rename(from.path, to.path) != 0 {
                try fileManager.copyItem(at: from, to: to)
                try fileManager.removeItem(at: from)
            }
        }
        if leftOver {
            var kept = home.appendingPathComponent("sessions.private")
            var suffix = 2
            while Self.kind(kept.path) != nil {
                kept = home.appendingPathComponent("sessions.private-\(suffix)")
                suffix += 1
            }
            try fileManager.moveItem(at: own, to: kept)
        } else {
            try fileManager.removeItem(at: own)
        }
    }

    /// Creates a directory of the user's (0700, with its parents) unless it exists; one that exists
    /// keeps the mode the user gave it.
    private static func makeDirectory(_ directory: URL) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw ServiceError(.invalidInput, "\(directory.path) is not a directory; Codex needs it to be one") }
            return
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Links `link` to `target`; another `exec` of the account linking it at the same moment is as good.
    private static func symlink(_ target: String, at link: String) throws {
        guard Glibc.symlink(target, link) == 0 else {
            if errno == EEXIST, (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == target { return }
            throw ServiceError(.invalidInput, "cannot link \(link) to \(target): \(String(cString: strerror(errno)))")
        }
    }

    /// The file type of a path itself (a link is a link), or `nil` when nothing is there.
    private static func kind(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
    }
}

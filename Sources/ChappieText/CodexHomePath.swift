/// How tables show a Codex home.
package enum CodexHomePath {
    /// `path` with `~` for `home` when inside it.
    package static func shown(_ path: String, home: String) -> String {
        path.hasPrefix(home + "/") ? "~" + path.dropFirst(home.count) : path
    }

    /// Whether `path` is one of `chappie exec`'s private homes: a UUID in a `codex-homes` directory.
    package static func isPrivate(_ path: String) -> Bool {
        let components = path.split(separator: "/")
        return components.count >= 2 && components[components.count - 2] == "codex-homes"
            && UUIDText.isUUID(components[components.count - 1], lowercaseOnly: false)
    }
}

/// How tables show a Codex home.
package enum CodexHomePath {
    /// `path` with `~` for `home` when inside it.
    package static func shown(_ path: String, home: String) -> String {
        path.hasPrefix(home + "/") ? "~" + path.dropFirst(home.count) : path
    }

    /// Whether `path` is one of `chappie exec`'s private homes: a UUID in a `codex-homes` directory.
    package static func isPrivate(_ path: String) -> Bool {
        let components = path.split(separator: "/")
        guard components.count >= 2, components[components.count - 2] == "codex-homes" else { return false }
        let uuid = Array(components[components.count - 1].utf8)
        return uuid.count == 36
            && uuid.enumerated().allSatisfy { offset, byte in
                [8, 13, 18, 23].contains(offset)
                    ? byte == UInt8(ascii: "-")
                    : (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
            }
    }
}

package import Foundation

/// The Codex processes of this user that run in a Codex home, found in `/proc`: a process whose
/// command is Codex's (`codex`, or the npm package's `codex-<target>`) and whose `CODEX_HOME` is
/// that home (without one, whose `HOME` holds it as `.codex`).
///
/// A running Codex keeps the tokens it started with in memory: when `switch` gives its home to
/// another account, it goes on as the old one until its next refresh, then stops and asks for a
/// sign-in, which is the wrong fix. `switch` and the daemon's auto-switch warn instead.
package enum RunningCodex {
    /// The ids of the Codex processes running in `home`, lowest first.
    package static func processes(in home: URL) -> [Int32] {
        all()[JobSession.resolved(home.path) ?? home.standardizedFileURL.path] ?? []
    }

    /// Every Codex process of this user, by the Codex home it runs in (its real path), lowest first.
    package static func all() -> [String: [Int32]] {
        let me = getpid()
        let user = getuid()
        var found: [String: [Int32]] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), pid != me else { continue }
            var info = stat()
            guard stat("/proc/\(entry)", &info) == 0, info.st_uid == user, isCodex(pid), let used = codexHome(of: pid) else { continue }
            found[JobSession.resolved(used) ?? used, default: []].append(pid)
        }
        return found.mapValues { $0.sorted() }
    }

    /// When a process started: `/proc/PID/stat`'s start time (clock ticks after boot) and the boot
    /// time of `/proc/stat`; `nil` when either cannot be read.
    package static func startTime(of pid: Int32) -> Date? {
        guard let stat = contents(of: "/proc/\(pid)/stat").map({ String(decoding: $0, as: UTF8.self) }), let close = stat.lastIndex(of: ")"),
            let system = contents(of: "/proc/stat").map({ String(decoding: $0, as: UTF8.self) })
        else { return nil }
        // After the name: " STATE PPID …", the start time being the 22nd field of the whole line.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]),
            let line = system.split(separator: "\n").first(where: { $0.hasPrefix("btime ") }), let boot = Double(line.dropFirst(6))
        else { return nil }
        let perSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard perSecond > 0 else { return nil }
        return Date(timeIntervalSince1970: boot + ticks / perSecond)
    }

    /// Whether the process's command name (`comm`, at most 15 bytes) is Codex's.
    private static func isCodex(_ pid: pid_t) -> Bool {
        guard let name = contents(of: "/proc/\(pid)/comm") else { return false }
        let command = String(decoding: name, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return command == "codex" || command.hasPrefix("codex-")
    }

    /// The Codex home the process uses: its `CODEX_HOME`, else `$HOME/.codex`.
    private static func codexHome(of pid: pid_t) -> String? {
        guard let environ = contents(of: "/proc/\(pid)/environ") else { return nil }
        // Only the two variables are kept: the rest of another program's environment (its secrets)
        // is never turned into strings.
        func value(_ name: String) -> String? {
            let prefix = Array((name + "=").utf8)
            guard let entry = environ.split(separator: 0).first(where: { $0.starts(with: prefix) }), entry.count > prefix.count else { return nil }
            return String(decoding: entry.dropFirst(prefix.count), as: UTF8.self)
        }
        if let home = value("CODEX_HOME") { return home }
        return value("HOME").map { $0 + "/.codex" }
    }

    /// A `/proc` file read to its end (its size says 0).
    private static func contents(of path: String) -> Data? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { break }
            data.append(contentsOf: buffer[..<count])
        }
        return data
    }
}

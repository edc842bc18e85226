import Foundation
import Synchronization

/// Which Codex session a job wrote, told without reading the job's output.
///
/// Codex keeps each session in a rollout file, `sessions/YYYY/MM/DD/rollout-TIME-ID.jsonl` in its
/// home, open for writing while the session lasts. Sessions are shared between Codex homes (see
/// ``SharedCodexHome``), so the newest file may be another job's: only a rollout the job's own
/// process tree is seen holding open for writing counts (one it merely reads, `rg` over the
/// sessions, does not), looked for in its open files every `interval` until one is found. A job
/// too quick to be seen so, or first seen writing two sessions, has no session chappie will name.
final class JobSession: Sendable {
    /// A session found: its id and rollout file.
    struct Found: Sendable, Hashable {
        var id: String
        var rollout: String
    }

    /// Why the session could not be told.
    struct Unknown: Error {
        var reason: String
    }

    /// The Codex home's `sessions` directory.
    let sessions: URL
    /// The rollout a resumed job goes on writing, wherever its file is.
    private let known: Found?
    private let seen = Mutex<(found: Found?, several: Bool)>((nil, false))

    /// A watch over `codexHome`'s sessions, and over `known`'s rollout (a resumed job's).
    init(codexHome: URL, known: Found? = nil) {
        sessions = codexHome.appendingPathComponent("sessions")
        self.known = known
    }

    /// Looks at the job's open files until the task is cancelled.
    /// Once a session is found it is the job's; sessions it opens later (a sub-agent's) do not
    /// change that, and the look becomes a slow one.
    func watch(_ root: pid_t, every interval: Duration = .milliseconds(50)) -> Task<Void, Never> {
        Task.detached { [self] in
            while !Task.isCancelled {
                let found = seen.withLock { $0.found }
                if found == nil {
                    let open = Self.openRollouts(of: root, under: sessions, known: known)
                    seen.withLock { seen in
                        // Two at first sight: which is the job's cannot be told.
                        if open.count > 1 { seen.several = true }
                        if seen.found == nil, !seen.several { seen.found = open.first }
                    }
                }
                if seen.withLock({ $0.found != nil || $0.several }) { return }
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// The rollout the job was seen holding open, or why there is none.
    func found() -> Result<Found, Unknown> {
        let (found, several) = seen.withLock { ($0.found, $0.several) }
        if several { return .failure(Unknown(reason: "the job was seen writing more than one Codex session")) }
        if let found { return .success(found) }
        return .failure(Unknown(reason: "the job was not seen writing a Codex session in \(sessions.path)"))
    }

    /// Makes a session found in one Codex home resumable from `home`, whose `sessions/` may be
    /// another directory (an account's own Codex home does not share the user's): a link to the
    /// rollout at the same `YYYY/MM/DD/` place, so that Codex appends to the one file. Nothing is
    /// done when `home` already sees it, or something else has that name there.
    ///
    /// - Returns: The link made, if one was.
    static func makeVisible(_ session: Found, in home: URL) throws -> String? {
        let sessions = home.appendingPathComponent("sessions")
        if let resolved = resolved(sessions.path), session.rollout.hasPrefix(resolved + "/") { return nil }
        let parts = session.rollout.split(separator: "/").suffix(4).map(String.init)
        guard parts.count == 4 else { return nil }
        let directory = sessions.appendingPathComponent(parts[0..<3].joined(separator: "/"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let link = directory.appendingPathComponent(parts[3]).path
        var info = stat()
        guard lstat(link, &info) != 0 else { return nil }
        guard symlink(session.rollout, link) == 0 else {
            throw ServiceError(.invalidInput, "cannot link \(link) to the session: \(String(cString: strerror(errno)))")
        }
        return link
    }

    /// A rollout's session id: the UUID that ends its name.
    static func rollout(_ path: String) -> Found? {
        let name = URL(fileURLWithPath: path).lastPathComponent
        guard name.hasPrefix("rollout-"), name.hasSuffix(".jsonl") else { return nil }
        let stem = name.dropLast(".jsonl".count)
        guard stem.count > 36, let id = UUID(uuidString: String(stem.suffix(36))) else { return nil }
        return Found(id: id.uuidString.lowercased(), rollout: path)
    }

    /// The rollouts under `sessions` (through any link to it), and `known`'s (wherever it is), that
    /// `root` or one of its descendants holds open for writing.
    static func openRollouts(of root: pid_t, under sessions: URL, known: Found? = nil) -> [Found] {
        var directories = [sessions.path]
        if let resolved = resolved(sessions.path) { directories.append(resolved) }
        let knownPaths = known.map { [$0.rollout, resolved($0.rollout)].compactMap { $0 } } ?? []
        var open: [Found] = []
        for process in descendants(of: root) {
            let fds = "/proc/\(process)/fd"
            for fd in (try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? [] {
                guard let target = link(fds + "/" + fd) else { continue }
                // The path first: fdinfo is read only for a rollout's descriptor.
                let found =
                    if let known, knownPaths.contains(target) { known } else if directories.contains(where: { target.hasPrefix($0 + "/") }) {
                        rollout(target)
                    } else { nil as Found? }
                if let found, isOpenForWriting("/proc/\(process)/fdinfo/\(fd)") { open.append(found) }
            }
        }
        return Array(Set(open))
    }

    /// Whether a descriptor's `fdinfo` says it was opened for writing (`flags`, octal: O_WRONLY or O_RDWR).
    static func isOpenForWriting(_ fdinfo: String) -> Bool {
        guard let text = try? String(contentsOfFile: fdinfo, encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("flags:") }),
            let flags = Int(line.dropFirst("flags:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        else { return false }
        return flags & 3 != 0
    }

    static func resolved(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    /// `root` and every process below it, from `/proc`.
    static func descendants(of root: pid_t) -> [pid_t] {
        var children: [pid_t: [pid_t]] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After the name in parentheses: " STATE PPID …".
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = pid_t(fields[1]) { children[parent, default: []].append(pid) }
        }
        var found = [root]
        var index = 0
        while index < found.count {
            found += children[found[index]] ?? []
            index += 1
        }
        return found
    }

    static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

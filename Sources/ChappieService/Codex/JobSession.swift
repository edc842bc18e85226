import Foundation
import Synchronization

/// Which Codex session a job wrote, told without reading the job's output.
///
/// Codex keeps each session in a rollout file, `sessions/YYYY/MM/DD/rollout-TIME-ID.jsonl` in its
/// home, open for writing while the session lasts. Sessions are shared between Codex homes (see
/// ``SharedCodexHome``), so the newest file may be another job's. While the job runs, its process
/// tree's open files are looked at every `interval`: a rollout one of them holds open is the job's.
/// A job too quick to be seen that way is matched by the one rollout that appeared while it ran;
/// when several did, none is chosen.
final class JobSession: Sendable {
    /// A session found: its id and rollout file.
    struct Found: Sendable, Equatable {
        var id: String
        var rollout: String
    }

    /// The Codex home's `sessions` directory.
    let sessions: URL
    private let before: Set<String>
    private let seen = Mutex<Found?>(nil)

    /// Starts watching for sessions in `codexHome`, noting the rollouts there now.
    init(codexHome: URL) {
        sessions = codexHome.appendingPathComponent("sessions")
        before = Set(Self.recentRollouts(in: sessions))
    }

    /// Looks at the job's open files until the task is cancelled.
    func watch(_ root: pid_t, every interval: Duration = .milliseconds(100)) -> Task<Void, Never> {
        Task.detached { [self] in
            while !Task.isCancelled {
                if seen.withLock({ $0 }) == nil, let open = Self.openRollout(of: root, under: sessions) {
                    seen.withLock { $0 = open }
                }
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// The job's session: the rollout it was seen holding open, else the only one that appeared
    /// since the watch began. `nil` with a reason when it cannot be told.
    func found() -> Result<Found, Unknown> {
        if let open = seen.withLock({ $0 }) { return .success(open) }
        let appeared = Self.recentRollouts(in: sessions).filter { !before.contains($0) }.compactMap(Self.found(rollout:))
        switch appeared.count {
        case 1: return .success(appeared[0])
        case 0: return .failure(Unknown(reason: "the job wrote no Codex session in \(sessions.path)"))
        default:
            return .failure(
                Unknown(reason: "\(appeared.count) Codex sessions appeared in \(sessions.path) while the job ran, and none was seen open by it"))
        }
    }

    /// Why the session could not be told.
    struct Unknown: Error {
        var reason: String
    }

    /// Makes a session found in one Codex home resumable from `home`, whose `sessions/` may be
    /// another directory (an account's own Codex home does not share the user's): a link to the
    /// rollout at the same `YYYY/MM/DD/` place, so that Codex appends to the one file. Nothing is
    /// done when `home` already sees it, or something else has that name there.
    ///
    /// - Returns: The link made, if one was.
    static func makeVisible(_ session: Found, in home: URL) throws -> String? {
        let sessions = home.appendingPathComponent("sessions")
        let resolved = realpath(sessions.path, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        }
        if let resolved, session.rollout.hasPrefix(resolved + "/") { return nil }
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
    static func found(rollout path: String) -> Found? {
        let name = URL(fileURLWithPath: path).lastPathComponent
        guard name.hasPrefix("rollout-"), name.hasSuffix(".jsonl") else { return nil }
        let stem = name.dropLast(".jsonl".count)
        guard stem.count > 36, let id = UUID(uuidString: String(stem.suffix(36))) else { return nil }
        return Found(id: id.uuidString.lowercased(), rollout: path)
    }

    /// The rollouts of the three newest day directories (`YYYY/MM/DD`), as absolute paths: a job
    /// writes into the day it started.
    static func recentRollouts(in sessions: URL) -> [String] {
        let fileManager = FileManager.default
        func entries(_ path: String) -> [String] { ((try? fileManager.contentsOfDirectory(atPath: path)) ?? []).filter { !$0.hasPrefix(".") } }
        var days: [String] = []
        for year in entries(sessions.path) where year.count == 4 {
            for month in entries(sessions.path + "/" + year) where month.count == 2 {
                days += entries(sessions.path + "/" + year + "/" + month).filter { $0.count == 2 }.map { "\(year)/\(month)/\($0)" }
            }
        }
        return days.sorted().suffix(3).flatMap { day in
            entries(sessions.path + "/" + day).filter { $0.hasPrefix("rollout-") && $0.hasSuffix(".jsonl") }.map {
                sessions.path + "/" + day + "/" + $0
            }
        }
    }

    /// A rollout under `sessions` (through any link to it) that `root` or one of its descendants
    /// holds open.
    static func openRollout(of root: pid_t, under sessions: URL) -> Found? {
        var directories = [sessions.path]
        if let resolved = realpath(sessions.path, nil) {
            directories.append(String(cString: resolved))
            free(resolved)
        }
        for process in descendants(of: root) {
            let fds = "/proc/\(process)/fd"
            for fd in (try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? [] {
                guard let target = link(fds + "/" + fd), directories.contains(where: { target.hasPrefix($0 + "/") }) else { continue }
                if let found = found(rollout: target) { return found }
            }
        }
        return nil
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

    private static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

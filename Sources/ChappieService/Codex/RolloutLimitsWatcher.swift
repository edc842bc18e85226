import ChappieCore
import ChappieStore
import Foundation

/// Stores the rate limits Codex writes into its rollouts (``CodexRollout``) as readings, for the
/// Codex homes chappie's accounts own: a limit Codex hits is then known within seconds, and the
/// daemon's auto-switch and alerts act on it without waiting for a poll.
///
/// Only a rollout a Codex process running in that home holds open for writing is read (found in
/// `/proc`, ``RunningCodex`` and ``JobSession``): homes share their `sessions/` (``SharedCodexHome``),
/// so a file's place does not tell whose session it is. Its readings go to the account that owned
/// the home when the process was first seen, and only when the home's `auth.json` held that
/// account's login then: a Codex started before a `switch` goes on as the account it started with,
/// and one seen first after a switch (a daemon restarted meanwhile) may run as another, so it is
/// passed over. Only the main limit (`codex`) is taken, and only when newer than the account's newest.
actor RolloutLimitsWatcher {
    private let store: any AccountStore
    /// How far a rollout has been read: its path → the offset after the last whole line taken.
    private var offsets: [String: UInt64] = [:]
    /// The account each Codex process runs as: its pid → the owner of its home when first seen.
    private var runsAs: [Int32: Int64] = [:]

    /// How much of a rollout one look reads at most; one first seen is read from this far before its end.
    static let window = 1 << 20

    init(store: any AccountStore) {
        self.store = store
    }

    /// Looks at every running Codex in a home an account owns; stores what it saw that is newer
    /// than the stored readings. Returns the accounts and readings stored.
    func sweep(now: Date = Date()) async -> [(account: Account, at: Date, snapshot: ChappieUsageLimitSnapshot)] {
        guard let accounts = try? await store.accounts(), let latest = try? await store.latestUsage() else { return [] }
        let running = RunningCodex.all()
        var stored: [(account: Account, at: Date, snapshot: ChappieUsageLimitSnapshot)] = []
        var alive: Set<Int32> = []
        var read: Set<String> = []
        for account in accounts {
            guard let home = account.codexHome, let pids = running[JobSession.resolved(home) ?? home] else { continue }
            let sessions = URL(fileURLWithPath: home).appendingPathComponent("sessions")
            let mirror = CodexMirror(home: URL(fileURLWithPath: home))
            let loginIsOwners = (try? CodexAuthFile.read(mirror.file))?.belongs(to: account) ?? false
            let ownerSince = Self.modified(mirror.ownerURL)
            for pid in pids {
                alive.insert(pid)
                // First seen: credited to the owner only while the home holds the owner's login, and
                // only when the process started after the home last changed hands (a daemon started
                // after a switch sees Codex processes that still run as the account before).
                let startedAfterSwitch =
                    ownerSince.map { since in RunningCodex.startTime(of: pid).map { $0 >= since.addingTimeInterval(-1) } ?? false } ?? true
                let ownerID = runsAs[pid] ?? (loginIsOwners && startedAfterSwitch ? account.id : -1)
                runsAs[pid] = ownerID
                guard let owner = accounts.first(where: { $0.id == ownerID }) else { continue }
                var newest: (at: Date, snapshot: ChappieUsageLimitSnapshot)?
                for found in JobSession.openRollouts(of: pid, under: sessions) where !read.contains(found.rollout) {
                    read.insert(found.rollout)
                    guard let seen = CodexRollout.newestRateLimits(in: newLines(of: found.rollout)) else { continue }
                    if newest.map({ seen.at > $0.at }) ?? true { newest = seen }
                }
                guard let newest, newest.at > (latest[owner.id]?.observedAt ?? .distantPast),
                    newest.at.timeIntervalSince(now) <= UsageSample.futureTolerance
                else { continue }
                if (try? await store.recordUsage([newest.snapshot], for: owner, source: .stream, at: newest.at)) != nil {
                    stored.append((owner, newest.at, newest.snapshot))
                }
            }
        }
        runsAs = runsAs.filter { alive.contains($0.key) }
        offsets = offsets.filter { read.contains($0.key) }
        return stored
    }

    /// When a file was last written, or `nil` when it is not there.
    private static func modified(_ url: URL) -> Date? {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { return nil }
        return Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }

    /// The whole lines written to `path` since the last look (a file first seen: those of its last
    /// ``window`` bytes); a line still being written waits for the next look.
    private func newLines(of path: String) -> [Substring] {
        // Non-blocking: a FIFO put in a rollout's place must not hold the daemon at its open.
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return [] }
        let size = UInt64(info.st_size)
        let known = offsets[path]
        // A file shorter than what was read was replaced: read it afresh.
        var start = known.flatMap { $0 <= size ? $0 : nil } ?? (size > UInt64(Self.window) ? size - UInt64(Self.window) : 0)
        let partialFirst = known == nil && start > 0
        let count = Int(min(size - start, UInt64(Self.window)))
        guard count > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: count)
        let got = pread(descriptor, &buffer, count, off_t(start))
        guard got > 0 else { return [] }
        guard let end = buffer[..<got].lastIndex(of: 0x0A) else {
            // A whole window with no line's end: a line longer than a window (a tool's output, an
            // image) is no event of ours; skipped, or the look would stop here for good.
            if got == Self.window { offsets[path] = start + UInt64(got) }
            return []
        }
        start += UInt64(end + 1)
        offsets[path] = start
        var lines = String(decoding: buffer[..<end], as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
        if partialFirst, !lines.isEmpty { lines.removeFirst() }
        return lines
    }
}

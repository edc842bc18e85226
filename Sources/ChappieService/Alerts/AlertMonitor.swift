import ChappieCore
import ChappieText
import ChappieVault
import Foundation
import Synchronization

/// Which alerts each reading calls for: a window's use going up past a threshold (once per window
/// cycle: the highest one crossed, when one reading jumps over several), and a window that was at
/// its limit starting afresh. What already fired is kept in `alerts-state.json` (0600) in the data
/// directory, so that a restarted daemon does not say it again.
///
/// A window is in a new cycle when its reset time moved (by more than 2 minutes) or its use fell by
/// 5 points or more (a redeemed reset credit empties it before its time).
actor AlertMonitor {
    /// What is remembered of one account's window.
    struct WindowState: Codable, Equatable {
        var resetsAt: Double?
        var used: Double
        /// The highest threshold fired in this cycle (0: none).
        var fired: Double
        /// Whether the window has been seen at its limit in this cycle.
        var full: Bool
    }

    struct State: Codable, Equatable {
        /// By `UUID:5h` or `UUID:weekly`.
        var windows: [String: WindowState] = [:]
        /// Accounts told to sign in again, until they are usable again.
        var signInRequired: Set<String> = []
        /// `UUID:window` → the reset time of the cycle in which a credit was redeemed (`--auto-redeem`).
        var redeemed: [String: Double] = [:]
    }

    /// What a reading came to.
    struct Observation: Equatable {
        var events: [AlertEvent]
        /// The windows that reached their limit with this reading.
        var reachedLimit: [ChappieUsageWindow.Kind]
        /// The windows at their limit now, whenever they reached it.
        var atLimit: [ChappieUsageWindow.Kind]
    }

    private let file: URL
    private let thresholds: [Double]
    private var state: State
    /// The zone of the times in messages (the daemon's `--tz`, else the system's).
    private let timeZone: TimeZone

    /// A monitor remembering in `directory`; a state file that cannot be read starts afresh.
    init(directory: URL, thresholds: [Double], timeZone: TimeZone = .current) {
        file = directory.appendingPathComponent("alerts-state.json")
        self.thresholds = thresholds.sorted()
        self.timeZone = timeZone
        state = Self.read(file) ?? State()
    }

    /// "at 06:05 (in 4 h 44 min)", "at Tue 06:05 (in 2 d 3 h)": a reset as a person reads it, in
    /// the monitor's zone (the body's `resetsAt` keeps the exact time).
    static func resetText(_ date: Date, now: Date, timeZone: TimeZone) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = date.timeIntervalSince(now) > 86_400 ? "EEE HH:mm" : "HH:mm"
        return "at \(formatter.string(from: date)) (\(RelativeTime.describe(date, now: now)))"
    }

    /// The alerts a new reading of `account` calls for.
    func observe(_ account: Account, _ snapshot: ChappieUsageLimitSnapshot, now: Date = Date()) -> Observation {
        var observation = Observation(events: [], reachedLimit: [], atLimit: [])
        let before = state
        for (name, window) in [(ChappieUsageWindow.Kind.fiveHour, snapshot.shortWindow), (.weekly, snapshot.longWindow)] {
            guard let window else { continue }
            let key = Self.key(account, name)
            let used = window.usedPercent
            let resets = window.resetsAt?.timeIntervalSince1970
            let label = name.label
            var remembered = state.windows[key] ?? WindowState(resetsAt: resets, used: 0, fired: 0, full: false)
            let moved = (remembered.resetsAt.flatMap { old in resets.map { abs($0 - old) > 120 } }) ?? false
            if moved || used <= remembered.used - 5 {
                if remembered.full, used < 100 {
                    observation.events.append(
                        AlertEvent(
                            .reset, account: account.name.rawValue, window: name, usedPercent: used, resetsAt: window.resetsAt, at: now,
                            message: "\(account.name)'s \(label) window, which was at its limit, started afresh (\(Int(used.rounded())) % used)"))
                }
                remembered = WindowState(resetsAt: resets, used: used, fired: 0, full: false)
                state.redeemed[key] = nil
            }
            if let crossed = thresholds.filter({ $0 > remembered.fired && used >= $0 }).max() {
                remembered.fired = crossed
                let resetText = window.resetsAt.map { "; it resets \(Self.resetText($0, now: now, timeZone: timeZone))" } ?? ""
                observation.events.append(
                    AlertEvent(
                        .threshold, account: account.name.rawValue, window: name, usedPercent: used, resetsAt: window.resetsAt, at: now,
                        message: crossed >= 100
                            ? "\(account.name) reached the limit of its \(label) window (\(Int(used.rounded())) %)\(resetText)"
                            : "\(account.name) has used \(Int(used.rounded())) % of its \(label) window (past \(Self.percent(crossed)) %)\(resetText)",
                        threshold: crossed))
            }
            if used >= 100, !remembered.full {
                remembered.full = true
                observation.reachedLimit.append(name)
            }
            if used >= 100 { observation.atLimit.append(name) }
            remembered.used = used
            remembered.resetsAt = resets
            state.windows[key] = remembered
        }
        if state != before { save() }
        return observation
    }

    /// Whether a credit was redeemed in this window's current cycle.
    func redeemedThisCycle(_ account: Account, window: ChappieUsageWindow.Kind) -> Bool {
        let key = Self.key(account, window)
        // Within 2 minutes, as cycles are told apart (reset times jitter).
        guard let redeemed = state.redeemed[key] else { return false }
        return abs(redeemed - (state.windows[key]?.resetsAt ?? 0)) <= 120
    }

    /// A credit was redeemed for this window's current cycle: no other is, until the next.
    func noteRedeemed(_ account: Account, window: ChappieUsageWindow.Kind) {
        let key = Self.key(account, window)
        state.redeemed[key] = state.windows[key]?.resetsAt ?? 0
        save()
    }

    /// Whether the account's need of a sign-in is still to be told of (once, until it is usable again).
    func shouldTellOfSignIn(_ account: Account) -> Bool {
        let inserted = state.signInRequired.insert(account.uuid.uuidString.lowercased()).inserted
        if inserted { save() }
        return inserted
    }

    /// The account works again: a later need of a sign-in is told again.
    func usable(_ account: Account) {
        if state.signInRequired.remove(account.uuid.uuidString.lowercased()) != nil { save() }
    }

    /// Writes what was fired; a failed write means a restarted daemon may say something again.
    private func save() {
        guard let data = try? JSONEncoder().encode(state) else { return }
        do {
            try PrivateFile.write(SecretBytes(copying: data), to: file)
        } catch {
            saveFailures.add(1, ordering: .relaxed)
        }
    }

    /// Writes of the state that failed (the daemon logs them).
    nonisolated let saveFailures = Atomic<Int>(0)

    /// The state kept, when the file is a regular file (a link, a FIFO or a device is not read).
    private static func read(_ file: URL) -> State? {
        let descriptor = open(file.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        guard let data = try? handle.read(upToCount: 4 << 20) else { return nil }
        return try? JSONDecoder().decode(State.self, from: data)
    }

    /// What one account's window is remembered by: `UUID:5h`, `UUID:weekly`.
    private static func key(_ account: Account, _ window: ChappieUsageWindow.Kind) -> String {
        "\(account.uuid.uuidString.lowercased()):\(window.rawValue)"
    }

    private static func percent(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

import CProcess
import ChappieCore
import Foundation
import Synchronization

/// A command chappie starts and stays the parent of (`lease run`, `exec --failover`), rather than
/// replacing itself with it as plain `exec` does.
enum ChildCommand {
    /// Why a command could not start: the exit status a shell gives (127 not found, 126 not
    /// runnable), and a sentence naming the program (never its arguments, which may hold secrets).
    struct SpawnFailure: Error {
        var status: Int32
        var reason: String
    }

    /// How a command ended.
    enum Termination: Sendable, Equatable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)

        /// The status a shell would report: the exit status, or 128 + the signal.
        var status: Int32 {
            switch self {
            case .exited(let status): status
            case .signalled(let number): 128 + number
            }
        }
    }

    /// Starts `command` (found on `PATH`) with chappie's standard streams and environment, less
    /// `removed` and plus `adding`, its signals as chappie was started with, and none of chappie's
    /// other descriptors; `standardInput`, when given, as its standard input; in a process group of
    /// its own when `ownProcessGroup`.
    static func spawn(
        _ command: [String], adding environment: [String: String], removing removed: [String], standardInput: Int32? = nil,
        ownProcessGroup: Bool = false
    ) throws(SpawnFailure) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput { posix_spawn_file_actions_adddup2(&actions, standardInput, 0) }
        // In the child, not by marking chappie's own descriptors first: another thread (the daemon
        // has many) may open one in between.
        guard chappie_spawn_close_from(&actions, 3) == 0 else {
            throw SpawnFailure(status: 126, reason: "cannot run \(command[0]): its descriptors could not be closed")
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        let inherited = ProcessReplacement.inheritedSignals
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in ProcessReplacement.changedSignals where !inherited.ignored.contains(number) { sigaddset(&defaults, number) }
        var mask = inherited.mask
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        // A job stays in chappie's process group (the terminal's Ctrl-C reaches it); a background
        // command gets its own, so that everything it started can be stopped together.
        if ownProcessGroup { posix_spawnattr_setpgroup(&attributes, 0) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | (ownProcessGroup ? POSIX_SPAWN_SETPGROUP : 0)))

        var merged = ProcessInfo.processInfo.environment
        for name in removed { merged[name] = nil }
        for (name, value) in environment { merged[name] = value }
        var variables: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        var arguments: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer {
            for pointer in variables { free(pointer) }
            for pointer in arguments { free(pointer) }
        }
        var child: pid_t = 0
        let result = posix_spawnp(&child, command[0], &actions, &attributes, &arguments, &variables)
        guard result == 0 else {
            throw SpawnFailure(status: result == ENOENT ? 127 : 126, reason: "cannot run \(command[0]): \(String(cString: strerror(result)))")
        }
        return child
    }

    /// Waits for the command on a thread of its own (`waitpid` blocks).
    static func wait(for child: pid_t) async -> Termination {
        await withCheckedContinuation { continuation in
            Thread {
                var status: Int32 = 0
                var result = waitpid(child, &status, 0)
                while result < 0, errno == EINTR { result = waitpid(child, &status, 0) }
                // Not reaped (ECHILD: SIGCHLD ignored by whoever started chappie): not a success.
                guard result == child else { return continuation.resume(returning: .exited(1)) }
                let signalled = status & 0x7f
                continuation.resume(returning: signalled == 0 ? .exited((status >> 8) & 0xff) : .signalled(signalled))
            }.start()
        }
    }
}

/// The signals of a process that stays a job's parent (`lease run`, `exec --failover`): passed on
/// to the command that runs, and once one has come, no further command is started.
public final class JobControl: Sendable {
    private let state = Mutex<(child: pid_t?, stop: Int32?)>((nil, nil))

    public init() {}

    /// A signal chappie got. With a command running, it is passed on (all but SIGINT, which the
    /// command had from the terminal) and `true` is returned; otherwise `false`, and the caller
    /// stops chappie's own work. Either way no command starts after it.
    @discardableResult
    public func signal(_ number: Int32) -> Bool {
        let child = state.withLock { state in
            state.stop = number
            return state.child
        }
        guard let child else { return false }
        if number != SIGINT { kill(child, number) }
        return true
    }

    /// The signal that asked chappie to stop, if one did.
    var stopRequested: Int32? { state.withLock { $0.stop } }

    /// A command started: signals go to it from now on. One that came since the last command ended
    /// reaches it at once (this one was not there to get it from the terminal).
    func running(_ child: pid_t) {
        let stop = state.withLock { state in
            state.child = child
            return state.stop
        }
        if let stop { kill(child, stop) }
    }

    /// The command ended and was reaped: its process id may be another process's from now on.
    func ended() {
        state.withLock { $0.child = nil }
    }
}

/// Where one run of a job runs (`lease run`, each run of `--failover`): its account, its Codex home
/// and environment, and how to give it back.
final class JobSeat: Sendable {
    let account: Account
    let codexHome: URL?
    let environment: [String: String]
    let removedVariables: [String]
    private let giveBack: @Sendable () async -> Void
    private let released = Atomic<Bool>(false)

    init(
        account: Account, codexHome: URL?, environment: [String: String], removedVariables: [String] = [],
        release: @escaping @Sendable () async -> Void
    ) {
        self.account = account
        self.codexHome = codexHome
        self.environment = environment
        self.removedVariables = removedVariables
        giveBack = release
    }

    /// Gives the seat back (the lease released, the in-use lock closed); once, however often asked.
    func release() async {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        await giveBack()
    }
}

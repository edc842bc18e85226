import Foundation
import Synchronization

/// A command chappie starts and stays the parent of (`lease run`, `exec --failover`), rather than
/// replacing itself with it as plain `exec` does.
enum ChildCommand {
    /// Why a command could not start, with its exit status.
    struct SpawnFailure: Error {
        var status: Int32
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
    /// other descriptors; `standardInput`, when given, as its standard input.
    static func spawn(
        _ command: [String], adding environment: [String: String], removing removed: [String], standardInput: Int32? = nil
    ) throws(SpawnFailure) -> pid_t {
        ProcessReplacement.markDescriptorsCloseOnExec()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput { posix_spawn_file_actions_adddup2(&actions, standardInput, 0) }
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
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

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
            FileHandle.standardError.write(Data("chappie: cannot run \(command[0]): \(String(cString: strerror(result)))\n".utf8))
            throw SpawnFailure(status: result == ENOENT ? 127 : 126)
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

import Foundation
import Synchronization

/// The write end of ``SignalRelay``'s pipe, for its C signal handler, which can capture nothing.
/// Set once, before the handler is installed, and never changed.
private nonisolated(unsafe) var signalPipeWriteEnd: Int32 = -1

/// The signal handler: one byte, the signal's number, into the pipe (`write` is async-signal-safe;
/// the end is non-blocking, so a full pipe drops the byte instead of blocking).
private func relaySignal(_ number: Int32) {
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalPipeWriteEnd, &byte, 1)
}

/// SIGINT (Ctrl-C) and SIGTERM for the whole process, once first used: each calls the handler of
/// the moment instead of killing the process. A signal that came while a handler was being
/// replaced is not lost: the next handler set is called at once. With no handler set, a signal has
/// its default action, as if chappie had never caught it.
///
/// A `sigaction` handler writing to a pipe (read by a thread of its own) takes the signals from the
/// moment it is installed. A `DispatchSource` for signals was not enough: under load a SIGTERM
/// sent just after it was made was sometimes lost, and a daemon ran on until SIGKILL.
final class SignalRelay: Sendable {
    /// The relay, installed on first use.
    static let shared = SignalRelay()

    private let state = Mutex<(received: Bool, handler: (@Sendable () -> Void)?)>((false, nil))

    private init() {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0, "chappie could not make a pipe for its signals: \(String(cString: strerror(errno)))")
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        signalPipeWriteEnd = ends[1]
        for number in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = relaySignal
            action.sa_flags = SA_RESTART
            sigemptyset(&action.sa_mask)
            sigaction(number, &action, nil)
        }
        let readEnd = ends[0]
        let thread = Thread { [self] in readSignals(from: readEnd) }
        thread.name = "chappie-signals"
        thread.start()
    }

    /// Sets what a signal does from now on; calls it at once if a signal has already come.
    func onSignal(_ handler: @escaping @Sendable () -> Void) {
        let received = state.withLock { state in
            state.handler = handler
            return state.received
        }
        if received { handler() }
    }

    /// Takes the handler away: a signal from now on has its default action.
    func release() {
        state.withLock { $0.handler = nil }
    }

    /// Reads the signals' numbers from the pipe, for as long as the process lives.
    private func readSignals(from descriptor: Int32) {
        var byte: UInt8 = 0
        while true {
            let count = read(descriptor, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { return }
            let handler = state.withLock { state in
                state.received = true
                return state.handler
            }
            if let handler {
                handler()
            } else {
                // Nobody takes signals now: the default action, as if chappie had never caught it.
                signal(Int32(byte), SIG_DFL)
                kill(getpid(), Int32(byte))
            }
        }
    }
}

/// Runs `work` in a task that SIGINT (Ctrl-C) and SIGTERM cancel, instead of killing the process:
/// a refresh already at the server is then finished and committed before chappie exits.
func cancellingOnSignals<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
    let task = Task { try await work() }
    SignalRelay.shared.onSignal { task.cancel() }
    defer { SignalRelay.shared.release() }
    return try await task.value
}

import ChappieSystem
import ChappieCore
import ChappieService
import CProcess
import CSignals
import Foundation
import Synchronization

/// SIGINT (Ctrl-C), SIGTERM and SIGHUP for the whole process, from ``install()`` at start-up: each calls
/// the handler of the moment instead of killing the process. With no handler set, a signal has its
/// default action, as if chappie had never caught it. Once a signal has come, every handler set
/// later is called at once, so a process can hand its signals from one phase to the next (the
/// daemon's start-up, then its service group) without losing one in between.
///
/// The handler itself is C (`CSignals`): it writes the signal's number to a pipe, which a thread of
/// chappie's own reads. A `DispatchSource` was not enough: libdispatch installs its handler later,
/// on its own thread, and under load a SIGTERM in between was lost (a daemon then ran on until
/// SIGKILL). A signal ignored when chappie started stays ignored.
final class SignalRelay: Sendable {
    /// The relay, made by ``install()``.
    static let shared = SignalRelay()

    /// The signals it takes.
    static let numbers = [SIGINT, SIGTERM, SIGHUP]

    private let state = Mutex<(received: Int32?, handler: (@Sendable (Int32) -> Void)?)>((nil, nil))

    private init() {
        let readEnd = chappie_signal_relay_open()
        precondition(readEnd >= 0, "chappie could not make a pipe for its signals: \(String(cString: strerror(errno)))")
        for number in Self.numbers where !ProcessReplacement.ignoredAtStart(number) {
            precondition(chappie_signal_relay_catch(number) == 0, "chappie could not take signal \(number): \(String(cString: strerror(errno)))")
        }
        let thread = Thread { [self] in readSignals(from: readEnd) }
        thread.name = "chappie-signals"
        thread.start()
    }

    /// Takes the signals from now on; call it first thing.
    static func install() {
        _ = shared
    }

    /// Sets what a signal does from now on, given its number; calls it at once with the last one if
    /// a signal has already come.
    func onSignal(_ handler: @escaping @Sendable (Int32) -> Void) {
        let received = state.withLock { state in
            state.handler = handler
            return state.received
        }
        if let received { handler(received) }
    }

    /// Stops this process as SIGTERM does when standard input ends (its writer closed it, or died),
    /// on a thread of its own: the read waits until then. The stop goes through the relay directly,
    /// so it works even where SIGTERM was ignored at start.
    static func terminateWhenStandardInputEnds() {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let count = read(STDIN_FILENO, &buffer, buffer.count)
                if count > 0 || (count < 0 && errno == EINTR) { continue }
                if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                    var ready = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
                    _ = poll(&ready, 1, -1)
                    continue
                }
                break
            }
            shared.deliver(SIGTERM)
        }
        thread.name = "chappie-stdin-lifeline"
        thread.start()
    }

    /// Takes the handler away: a signal from now on has its default action.
    func release() {
        state.withLock { $0.handler = nil }
    }

    /// Reads the signals' numbers from the pipe, for as long as the process lives.
    private func readSignals(from descriptor: Int32) {
        // Foundation's `Thread.name` names no thread on Linux; ps -L and the tests see this one.
        _ = chappie_thread_set_name("chappie-signals")
        var byte: UInt8 = 0
        while true {
            let count = read(descriptor, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else {
                // Cannot happen while the process lives; if it did, signals would go nowhere: give
                // them back their default action rather than lose them.
                for number in Self.numbers where !ProcessReplacement.ignoredAtStart(number) { signal(number, SIG_DFL) }
                return
            }
            deliver(Int32(byte))
        }
    }

    /// Does what signal `number` asks: the handler of the moment, else the default action.
    private func deliver(_ number: Int32) {
        let handler = state.withLock { state in
            state.received = number
            return state.handler
        }
        if let handler {
            handler(number)
        } else {
            signal(number, SIG_DFL)
            kill(getpid(), number)
        }
    }
}

/// A task that a signal may cancel before it exists: ``track(_:)`` cancels it at once then.
private final class PendingCancellation: Sendable {
    private let state = Mutex<(cancelled: Bool, cancel: (@Sendable () -> Void)?)>((false, nil))

    /// Cancels the tracked task, or the one tracked next.
    func cancel() {
        let cancel = state.withLock { state in
            state.cancelled = true
            return state.cancel
        }
        cancel?()
    }

    /// Tracks a task by its `cancel`; calls it at once if ``cancel()`` came first.
    func track(_ cancel: @escaping @Sendable () -> Void) {
        let cancelled = state.withLock { state in
            state.cancel = cancel
            return state.cancelled
        }
        if cancelled { cancel() }
    }
}

/// Runs `work` in a task that SIGINT (Ctrl-C), SIGTERM and SIGHUP cancel, instead of killing the process:
/// a refresh already at the server is then finished and committed before chappie exits. The
/// signals are taken before the work starts.
///
/// - Parameters:
///   - releasing: Whether signals get their default action back afterwards; `false` when the
///     caller sets the next handler itself (a signal in between then reaches that handler).
///   - control: A job the work runs: while a command of it runs, a signal goes to the command
///     instead (``JobControl/signal(_:)``), and the work goes on to its end.
///   - stoppedIfSignalled: Whether a signal makes the outcome a stop (``CancellationError``, exit
///     130) even when the work returns: for work whose result lists what each part did.
func cancellingOnSignals<T: Sendable>(
    releasing: Bool = true, passingTo control: JobControl? = nil, stoppedIfSignalled: Bool = false,
    _ work: @escaping @Sendable () async throws -> T
) async throws -> T {
    let pending = PendingCancellation()
    let signalled = Atomic<Bool>(false)
    SignalRelay.shared.onSignal { number in
        if control?.signal(number) == true { return }
        // Said once, and only while there is one: a refresh the issuer may already have answered
        // is never abandoned.
        if !signalled.exchange(true, ordering: .relaxed), RefreshBounds.inFlight.load(ordering: .relaxed) > 0 {
            StandardStream.error.write(
                "chappie: stopping; a refresh already sent waits for the issuer's answer (up to \(RefreshBounds.answerTimeout.components.seconds) s) and is stored first\n"
            )
        }
        pending.cancel()
    }
    defer { if releasing { SignalRelay.shared.release() } }
    let task = Task { try await work() }
    pending.track { task.cancel() }
    let value: T
    do {
        value = try await task.value
    } catch  where control == nil && signalled.load(ordering: .relaxed) && FailureDescription(error)?.exitCode != ChappieExitCode.interrupted {
        // What a signal cancelled fails in its own words ("reading the store was cancelled"): it
        // was stopped, 130, and says so. An error that already says it was stopped (a sign-in
        // cancelled) keeps its words.
        throw CancellationError()
    }
    // Work of many parts that returns what each did (each account's poll, each refresh) reports
    // the parts a signal cancelled as failures: it was stopped, 130, and says so instead.
    if stoppedIfSignalled, signalled.load(ordering: .relaxed) { throw CancellationError() }
    return value
}

import Dispatch
import Foundation
import Synchronization

/// SIGINT (Ctrl-C) and SIGTERM, taken from the moment it is made until `close()`: each calls the
/// handler of the moment instead of killing the process. A signal that came while there was no
/// handler, or before the one set now, is not lost: the next handler set is called at once.
///
/// So a process can hand its signals from one phase to the next (a start-up task, then a service
/// group) with no moment where a SIGTERM is dropped or kills it.
final class SignalRelay: @unchecked Sendable {
    // The sources are set in init and cancelled in close(), on the caller's task; the state is behind a lock.
    private let sources: [any DispatchSourceSignal]
    private let state = State()

    /// Whether a signal came, and the handler of the moment; shared with the sources' handlers.
    private final class State: Sendable {
        let lock = Mutex<(received: Bool, handler: (@Sendable () -> Void)?)>((false, nil))
    }

    /// Starts taking SIGINT and SIGTERM.
    init() {
        let state = self.state
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler {
                let handler = state.lock.withLock { state in
                    state.received = true
                    return state.handler
                }
                handler?()
            }
            source.resume()
            return source
        }
    }

    /// Sets what a signal does from now on; calls it at once if a signal has already come.
    func onSignal(_ handler: @escaping @Sendable () -> Void) {
        let received = state.lock.withLock { state in
            state.handler = handler
            return state.received
        }
        if received { handler() }
    }

    /// Stops taking the signals: they kill the process again.
    func close() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}

/// Runs `work` in a task that SIGINT (Ctrl-C) and SIGTERM cancel, instead of killing the process:
/// a refresh already at the server is then finished and committed before chappie exits.
func cancellingOnSignals<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
    let signals = SignalRelay()
    defer { signals.close() }
    let task = Task { try await work() }
    signals.onSignal { task.cancel() }
    return try await task.value
}

import Dispatch
import Foundation

/// Runs `work` in a task that SIGINT (Ctrl-C) and SIGTERM cancel, instead of killing the process:
/// a refresh already at the server is then finished and committed before chappie exits.
func cancellingOnSignals<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
    let task = Task { try await work() }
    let sources = [SIGINT, SIGTERM].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number)
        source.setEventHandler { task.cancel() }
        source.resume()
        return source
    }
    defer {
        for source in sources { source.cancel() }
    }
    return try await task.value
}

public import ChappieStore
public import Foundation
import Synchronization

/// Talks to a running daemon over its Unix socket: one request line, one reply line. Used by the
/// commands a daemon can answer without this process opening the store (`token`, `usage --cached`,
/// `daemon status`). This target links neither NIO nor PostgreSQL's client, so that a front end
/// made of it and the store's read path starts as fast as a SQLite read.
public enum DaemonClient {
    /// The default socket path in a data directory.
    public static func defaultSocket(in location: StoreLocation) -> URL {
        location.directory.appendingPathComponent("chappie.sock")
    }

    /// What asking a daemon came to.
    public enum Outcome: Sendable {
        /// The daemon's reply.
        case replied(DaemonReply)
        /// Nothing listens at the socket (no file, or nobody accepts there).
        case noDaemon
        /// Something accepted the connection but gave no reply that reads as one within the
        /// timeout (a daemon overloaded or stuck, or a socket that is not a daemon's), or the task
        /// was cancelled.
        case noAnswer
    }

    /// Sends a request; `nil` when no daemon answered (``ask(_:to:timeout:)`` says which way).
    public static func send(_ request: DaemonRequest, to socket: URL, timeout: Duration = .seconds(60)) async -> DaemonReply? {
        if case .replied(let reply) = await ask(request, to: socket, timeout: timeout) { reply } else { nil }
    }

    /// Sends a request and says what came of it. The socket is used on a thread of its own (no call
    /// blocks Swift's cooperative pool); cancelling the task shuts the connection down at once.
    public static func ask(_ request: DaemonRequest, to socket: URL, timeout: Duration = .seconds(60)) async -> Outcome {
        let connection = OpenConnection()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let thread = Thread { continuation.resume(returning: sendNow(request, to: socket, timeout: timeout, connection: connection)) }
                thread.name = "chappie.daemon-client"
                thread.start()
            }
        } onCancel: {
            connection.cancel()
        }
    }

    /// ``ask(_:to:timeout:)`` on the calling thread.
    static func sendNow(_ request: DaemonRequest, to socket: URL, timeout: Duration, connection: OpenConnection) -> Outcome {
        guard FileManager.default.fileExists(atPath: socket.path), let descriptor = UnixSocketClient.connect(to: socket.path, timeout: timeout)
        else {
            return .noDaemon
        }
        defer { connection.close() }
        guard connection.open(descriptor), var line = try? JSONEncoder().encode(request) else { return .noAnswer }
        line.append(0x0A)
        UnixSocketClient.write(descriptor, line)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        guard let answer = UnixSocketClient.readLine(descriptor, limit: UnixSocketClient.maximumReplyBytes, timeout: timeout),
            let reply = try? decoder.decode(DaemonReply.self, from: answer)
        else { return .noAnswer }
        return .replied(reply)
    }
}

/// The client's one connection, shared with a cancellation: cancelling shuts it down, so that a
/// read waiting for the daemon returns at once; it is closed by whoever opened it.
final class OpenConnection: Sendable {
    private struct State {
        var descriptor: Int32?
        var cancelled = false
    }

    private let state = Mutex(State())

    /// Takes the connected descriptor; `false` (and the descriptor closed) when already cancelled.
    func open(_ descriptor: Int32) -> Bool {
        let taken = state.withLock { state in
            guard !state.cancelled else { return false }
            state.descriptor = descriptor
            return true
        }
        if !taken { Glibc.close(descriptor) }
        return taken
    }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            if let descriptor = state.descriptor { shutdown(descriptor, Int32(SHUT_RDWR)) }
        }
    }

    func close() {
        state.withLock { state in
            if let descriptor = state.descriptor { Glibc.close(descriptor) }
            state.descriptor = nil
        }
    }
}

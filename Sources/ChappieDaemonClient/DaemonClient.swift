public import ChappieStore
public import Foundation
import ChappieSystem
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
    ///
    /// - Throws: ``DaemonSocketError`` when another user listens at the socket.
    public static func send(_ request: DaemonRequest, to socket: URL, timeout: Duration = .seconds(60)) async throws(DaemonSocketError)
        -> DaemonReply?
    {
        if case .replied(let reply) = try await ask(request, to: socket, timeout: timeout) { reply } else { nil }
    }

    /// Sends a request and says what came of it. The socket is used on a thread of its own (no call
    /// blocks Swift's cooperative pool); cancelling the task shuts the connection down at once.
    ///
    /// - Throws: ``DaemonSocketError`` when another user listens at the socket: never a reason to
    ///   read the store instead, since whoever planted it can also have planted the rest.
    public static func ask(_ request: DaemonRequest, to socket: URL, timeout: Duration = .seconds(60)) async throws(DaemonSocketError) -> Outcome {
        let connection = OpenConnection()
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let thread = Thread { continuation.resume(returning: sendNow(request, to: socket, timeout: timeout, connection: connection)) }
                thread.name = "chappie.daemon-client"
                thread.start()
            }
        } onCancel: {
            connection.cancel()
        }
        return try outcome.get()
    }

    /// ``ask(_:to:timeout:)`` on the calling thread.
    static func sendNow(_ request: DaemonRequest, to socket: URL, timeout: Duration, connection: OpenConnection) -> Result<Outcome, DaemonSocketError>
    {
        guard let line = try? JSONEncoder().encode(request) else { return .success(.noAnswer) }
        let milliseconds = Int(timeout.components.seconds) * 1000 + Int(timeout.components.attoseconds / 1_000_000_000_000_000)
        let watch = ConnectionWatch(connected: connection.open, closing: connection.close)
        switch DaemonSocketExchange.exchange(Array(line), socket: socket.path, timeoutMilliseconds: max(1, milliseconds), watch: watch) {
        case .noDaemon: return .success(.noDaemon)
        case .noAnswer: return .success(.noAnswer)
        case .foreignListener(let uid): return .failure(DaemonSocketError.foreignListener(socket: socket.path, uid: uid))
        case .reply(let answer):
            // Read as the front binary reads it: a reply Foundation would take but the strict reader
            // refuses (a key twice, of which Foundation keeps the last) is no reply.
            guard JSONValue.parse(answer) != nil else { return .success(.noAnswer) }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .secondsSince1970
            guard let reply = try? decoder.decode(DaemonReply.self, from: Data(answer)) else { return .success(.noAnswer) }
            return .success(.replied(reply))
        }
    }
}

/// The client's one connection, shared with a cancellation: cancelling shuts it down, so that a
/// read waiting for the daemon returns at once; the exchange closes it.
final class OpenConnection: Sendable {
    private struct State {
        var descriptor: Int32?
        var cancelled = false
    }

    private let state = Mutex(State())

    /// Takes the connected descriptor; `false` when already cancelled (the exchange then closes it).
    @Sendable func open(_ descriptor: Int32) -> Bool {
        state.withLock { state in
            guard !state.cancelled else { return false }
            state.descriptor = descriptor
            return true
        }
    }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            if let descriptor = state.descriptor { shutdown(descriptor, Int32(SHUT_RDWR)) }
        }
    }

    /// Forgets the descriptor, which the exchange closes next: a later cancel shuts nothing down.
    @Sendable func close() {
        state.withLock { $0.descriptor = nil }
    }
}

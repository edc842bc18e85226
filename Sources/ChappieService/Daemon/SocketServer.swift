import ChappieDaemonClient
import ChappieCore
import Foundation
import Synchronization

/// The daemon's socket server: one thread runs a `poll(2)` loop over the listener and every
/// connection, all non-blocking, so an idle, slow or half-closed client never holds a thread, never
/// delays another client, and never delays the refresh schedule (which runs on Swift's own
/// threads). Requests are answered on tasks; their replies come back to the loop through a pipe.
///
/// Limits: at most ``Limits/maximumConnections`` at once (past it, the oldest connection still
/// waiting for its request is closed, or if all are being answered the oldest of those); a request
/// line must arrive within the request deadline and a reply be taken within the same time, or the
/// connection is closed. Only the daemon's own user is served.
final class SocketServer: Sendable {
    /// How much the server allows each client.
    struct Limits: Sendable {
        /// Open connections at most. Default: 64.
        var maximumConnections = 64
        /// How long a client may take to send its request line, and to take its reply. Default: 10 s.
        var requestDeadline: Duration = .seconds(10)
    }

    private let listener: Int32
    private let limits: Limits
    private let handler: @Sendable (DaemonRequest) async -> DaemonReply
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let shared = Mutex(Shared())
    private let finished = DispatchSemaphore(value: 0)

    private struct Shared: Sendable {
        var replies: [(connection: Int, bytes: Data)] = []
        var stopping = false
    }

    /// Serves the listening socket `listener` with `handler`.
    init(listener: Int32, limits: Limits = Limits(), handler: @escaping @Sendable (DaemonRequest) async -> DaemonReply) throws(ServiceError) {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            throw ServiceError(.configuration, "cannot create the socket server's wake-up pipe: \(String(cString: strerror(errno)))")
        }
        self.listener = listener
        self.limits = limits
        self.handler = handler
        self.wakeRead = pipeEnds[0]
        self.wakeWrite = pipeEnds[1]
        for descriptor in [listener, wakeRead, wakeWrite] { UnixSocket.setNonBlocking(descriptor) }
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Starts the loop on a thread of its own.
    func start() {
        let thread = Thread { [self] in
            var loop = Loop(server: self)
            loop.run()
            finished.signal()
        }
        thread.name = "chappie.socket"
        thread.start()
    }

    /// Stops the loop, closes every connection and the listener, and waits (briefly) for the thread.
    func stop() {
        shared.withLock { $0.stopping = true }
        wake()
        _ = finished.wait(timeout: .now() + 2)
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Hands a reply to the loop (from a handler's task).
    fileprivate func deliver(_ reply: DaemonReply, to connection: Int) {
        guard let bytes = Self.line(reply) else { return }
        shared.withLock { $0.replies.append((connection, bytes)) }
        wake()
    }

    /// A reply as its line on the wire.
    fileprivate static func line(_ reply: DaemonReply) -> Data? {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        guard var bytes = try? encoder.encode(reply) else { return nil }
        bytes.append(0x0A)
        return bytes
    }

    /// The loop's state: lives on the loop's thread only.
    private struct Loop {
        enum Phase {
            /// Waiting for the request line.
            case reading
            /// The handler is working on it.
            case answering
            /// Sending the reply; then close (or drain what the client still sends, then close).
            case writing(drainAfter: Bool)
            /// Discarding what an over-long request still sends, so closing does not reset away the reply.
            case draining(left: Int)
        }

        final class Connection {
            let id: Int
            let descriptor: Int32
            let openedAt: ContinuousClock.Instant
            var deadline: ContinuousClock.Instant
            var phase: Phase = .reading
            var input = Data()
            var output = Data()
            var written = 0

            init(id: Int, descriptor: Int32, now: ContinuousClock.Instant, deadline: Duration) {
                self.id = id
                self.descriptor = descriptor
                self.openedAt = now
                self.deadline = now + deadline
            }
        }

        let server: SocketServer
        let clock = ContinuousClock()
        var connections: [Int: Connection] = [:]
        var nextID = 0

        init(server: SocketServer) {
            self.server = server
        }

        mutating func run() {
            defer { shutDown() }
            while !server.shared.withLock({ $0.stopping }) {
                var descriptors = [
                    pollfd(fd: server.listener, events: Int16(POLLIN), revents: 0), pollfd(fd: server.wakeRead, events: Int16(POLLIN), revents: 0),
                ]
                let order = connections.keys.sorted()
                for id in order {
                    let connection = connections[id]!
                    switch connection.phase {
                    case .reading, .draining: descriptors.append(pollfd(fd: connection.descriptor, events: Int16(POLLIN), revents: 0))
                    case .writing: descriptors.append(pollfd(fd: connection.descriptor, events: Int16(POLLOUT), revents: 0))
                    case .answering: descriptors.append(pollfd(fd: -1, events: 0, revents: 0))
                    }
                }
                let ready = poll(&descriptors, nfds_t(descriptors.count), pollTimeout())
                if ready < 0, errno != EINTR { return }
                if descriptors[1].revents != 0 { drainWakePipe() }
                takeReplies()
                for (index, id) in order.enumerated() where descriptors[index + 2].revents != 0 {
                    if let connection = connections[id] { service(connection, events: descriptors[index + 2].revents) }
                }
                if descriptors[0].revents != 0 { acceptAll() }
                closeOverdue()
            }
        }

        /// Milliseconds until the nearest deadline (at most one second, so `stop` is seen promptly).
        func pollTimeout() -> Int32 {
            let now = clock.now
            var wait = Duration.seconds(1)
            for connection in connections.values {
                if case .answering = connection.phase { continue }
                wait = min(wait, connection.deadline - now)
            }
            return Int32(min(1000, wait.wholeMilliseconds))
        }

        mutating func acceptAll() {
            while true {
                let descriptor = accept(server.listener, nil, nil)
                if descriptor < 0 {
                    if errno == EINTR { continue }
                    // Out of descriptors: free one, or the listener stays readable and the loop spins.
                    if errno == EMFILE || errno == ENFILE, !closeOldest() { usleep(10_000) }
                    return
                }
                UnixSocket.setNonBlocking(descriptor)
                if connections.count >= server.limits.maximumConnections { _ = closeOldest() }
                let connection = Connection(id: nextID, descriptor: descriptor, now: clock.now, deadline: server.limits.requestDeadline)
                nextID += 1
                connections[connection.id] = connection
                if UnixSocket.peerUserID(descriptor) != getuid() {
                    respond(connection, .failure("this daemon serves its own user only", exitCode: ChappieExitCode.signInRequired), drainAfter: false)
                }
            }
        }

        /// Makes room: closes the connection that has waited longest for its request, else (every
        /// connection being answered) the oldest one, whose reply is then dropped; `false` if none is open.
        mutating func closeOldest() -> Bool {
            let waiting = connections.values.filter { if case .reading = $0.phase { true } else { false } }
            guard let oldest = waiting.min(by: { $0.openedAt < $1.openedAt }) ?? connections.values.min(by: { $0.openedAt < $1.openedAt })
            else { return false }
            finish(oldest)
            return true
        }

        mutating func service(_ connection: Connection, events: Int16) {
            if events & Int16(POLLNVAL) != 0 { return finish(connection) }
            switch connection.phase {
            case .reading: read(connection)
            case .draining(let left): drain(connection, left: left)
            case .writing(let drainAfter): flush(connection, drainAfter: drainAfter)
            case .answering: break
            }
        }

        mutating func read(_ connection: Connection) {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = Glibc.read(connection.descriptor, &buffer, buffer.count)
                if count < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN || errno == EWOULDBLOCK { return }
                    finish(connection)
                    return
                }
                if count == 0 {
                    // Half-closed: what was sent is the request, if anything was.
                    if connection.input.isEmpty {
                        respond(
                            connection,
                            .failure("no request line (one JSON object, at most 64 KiB, ending with a newline)", exitCode: ChappieExitCode.usage),
                            drainAfter: false)
                    } else {
                        dispatch(connection, line: connection.input)
                    }
                    return
                }
                if let newline = buffer[0..<count].firstIndex(of: 0x0A) {
                    connection.input.append(contentsOf: buffer[0..<newline])
                    dispatch(connection, line: connection.input)
                    return
                }
                connection.input.append(contentsOf: buffer[0..<count])
                if connection.input.count > UnixSocket.maximumRequestBytes {
                    respond(
                        connection,
                        .failure("no request line (one JSON object, at most 64 KiB, ending with a newline)", exitCode: ChappieExitCode.usage),
                        drainAfter: true)
                    return
                }
            }
        }

        mutating func dispatch(_ connection: Connection, line: Data) {
            guard let request = DaemonRequest.decode(line: line) else {
                respond(
                    connection, .failure("the request is not a JSON object with a \"command\"", exitCode: ChappieExitCode.usage), drainAfter: false)
                return
            }
            connection.phase = .answering
            let (server, id) = (self.server, connection.id)
            Task { server.deliver(await server.handler(request), to: id) }
        }

        mutating func respond(_ connection: Connection, _ reply: DaemonReply, drainAfter: Bool) {
            guard let bytes = SocketServer.line(reply) else { return finish(connection) }
            startWriting(connection, bytes, drainAfter: drainAfter)
        }

        mutating func startWriting(_ connection: Connection, _ bytes: Data, drainAfter: Bool) {
            connection.output = bytes
            connection.written = 0
            connection.phase = .writing(drainAfter: drainAfter)
            connection.deadline = clock.now + server.limits.requestDeadline
            flush(connection, drainAfter: drainAfter)
        }

        mutating func flush(_ connection: Connection, drainAfter: Bool) {
            while connection.written < connection.output.count {
                let count = connection.output.withUnsafeBytes { bytes in
                    // MSG_NOSIGNAL: a client gone before its reply is an EPIPE here, never a SIGPIPE
                    // that would end the daemon (and any refresh between redemption and commit).
                    send(connection.descriptor, bytes.baseAddress! + connection.written, bytes.count - connection.written, Int32(MSG_NOSIGNAL))
                }
                if count < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN || errno == EWOULDBLOCK { return }
                    return finish(connection)
                }
                connection.written += count
            }
            guard drainAfter else { return finish(connection) }
            // Let the client finish sending (up to a bound) so that closing does not reset away the reply.
            shutdown(connection.descriptor, Int32(SHUT_WR))
            connection.phase = .draining(left: 4 << 20)
            connection.deadline = clock.now + server.limits.requestDeadline
        }

        mutating func drain(_ connection: Connection, left: Int) {
            var buffer = [UInt8](repeating: 0, count: 16384)
            var left = left
            while left > 0 {
                let count = Glibc.read(connection.descriptor, &buffer, buffer.count)
                if count < 0, errno == EINTR { continue }
                if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                    connection.phase = .draining(left: left)
                    return
                }
                if count <= 0 { break }
                left -= count
            }
            finish(connection)
        }

        mutating func takeReplies() {
            let replies = server.shared.withLock { shared in
                defer { shared.replies.removeAll() }
                return shared.replies
            }
            for reply in replies {
                // The connection may have been closed meanwhile; then the reply has nowhere to go.
                guard let connection = connections[reply.connection], case .answering = connection.phase else { continue }
                startWriting(connection, reply.bytes, drainAfter: false)
            }
        }

        func drainWakePipe() {
            var buffer = [UInt8](repeating: 0, count: 256)
            while Glibc.read(server.wakeRead, &buffer, buffer.count) > 0 {}
        }

        mutating func closeOverdue() {
            let now = clock.now
            for connection in connections.values where now >= connection.deadline {
                if case .answering = connection.phase { continue }
                finish(connection)
            }
        }

        mutating func finish(_ connection: Connection) {
            close(connection.descriptor)
            connections[connection.id] = nil
        }

        mutating func shutDown() {
            for connection in connections.values { close(connection.descriptor) }
            connections.removeAll()
            shutdown(server.listener, Int32(SHUT_RDWR))
            close(server.listener)
        }
    }
}

public import Glibc

/// One request line to a running daemon and its one reply line, over the daemon's Unix socket
/// (docs/operations.md, "The local API"). Both binaries ask through it, so that they ask alike: the
/// same timeouts, the same bound on a reply, the same check of who listens.
///
/// A socket is a name in a directory: whoever can write the directory, or listen first, can put
/// a server of their own there and hand out a token of their choosing. So before a byte is sent, the
/// kernel says who accepted the connection (`SO_PEERCRED`), and only this user or root is talked to
/// (``SocketPeer``).
public enum DaemonSocketExchange {
    /// What asking came to.
    public enum Outcome: Equatable, Sendable {
        /// The reply line, without its line feed.
        case reply([UInt8])
        /// Nothing listens at the path (no file there, or nobody accepts).
        case noDaemon
        /// Something accepted the connection but gave no whole line within the timeout, or the
        /// exchange was cancelled.
        case noAnswer
        /// Another user's process listens there (its uid); nothing was sent to it.
        case foreignListener(uid: UInt32)
    }

    /// The longest reply line read (a `metrics` or `accounts` reply of a large store fits).
    public static let maximumReplyBytes = 64 << 20

    /// Sends `request` (one line, without its line feed) to the daemon at `path` and reads its one
    /// reply line, within `timeoutMilliseconds` each way.
    ///
    /// - Parameter watch: Told of the connected descriptor before anything is sent (`false` when the
    ///   exchange is cancelled already: nothing is sent), and again just before it is closed: a
    ///   caller that may cancel shuts it down in between.
    public static func exchange(
        _ request: [UInt8], socket path: String, timeoutMilliseconds: Int, watch: ConnectionWatch = ConnectionWatch()
    ) -> Outcome {
        guard var address = address(path) else { return .noDaemon }
        var info = stat()
        guard stat(path, &info) == 0 else { return .noDaemon }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .noDaemon }
        defer { close(descriptor) }
        // Before connecting: a listener whose queue is full blocks a connect.
        var limit = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { return .noDaemon }
        guard let peer = SocketPeer.uid(of: descriptor) else { return .noAnswer }
        guard SocketPeer.isTrusted(uid: peer) else { return .foreignListener(uid: peer) }
        guard watch.connected(descriptor) else { return .noAnswer }
        defer { watch.closing() }
        guard sendAll(descriptor, request + [0x0A]) else { return .noAnswer }
        return readLine(descriptor, timeoutMilliseconds: timeoutMilliseconds).map(Outcome.reply) ?? .noAnswer
    }

    /// The address of a socket at `path`; `nil` when the path does not fit `sun_path`.
    public static func address(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count <= maximumPathBytes else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    /// How long a socket path may be, in bytes.
    public static var maximumPathBytes: Int { MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1 }

    /// Writes all of `bytes`; a peer gone is a failure here, never a SIGPIPE (`MSG_NOSIGNAL`).
    private static func sendAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// One line, within the timeout in all; what came before an end of file counts as the line.
    /// A read that timed out or failed leaves a line cut short: no answer.
    private static func readLine(_ descriptor: Int32, timeoutMilliseconds: Int) -> [UInt8]? {
        func milliseconds() -> Int {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            return now.tv_sec * 1000 + now.tv_nsec / 1_000_000
        }
        let deadline = milliseconds() + timeoutMilliseconds
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            guard milliseconds() < deadline else { return nil }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            guard count > 0 else { return line.isEmpty ? nil : line }
            if let newline = buffer[0..<count].firstIndex(of: 0x0A) { return line + buffer[0..<newline] }
            line += buffer[0..<count]
            guard line.count <= maximumReplyBytes else { return nil }
        }
    }
}

/// What a caller that may cancel an exchange is told of its connection (see
/// ``DaemonSocketExchange/exchange(_:socket:timeoutMilliseconds:watch:)``).
public struct ConnectionWatch: Sendable {
    /// Takes the connected descriptor; `false` when the exchange is cancelled already.
    public var connected: @Sendable (Int32) -> Bool
    /// Called before the descriptor is closed.
    public var closing: @Sendable () -> Void

    /// A watch; by default, one that never cancels.
    public init(connected: @escaping @Sendable (Int32) -> Bool = { _ in true }, closing: @escaping @Sendable () -> Void = {}) {
        self.connected = connected
        self.closing = closing
    }
}

/// Who is at the other end of a Unix socket, and whether chappie talks to them: its own user (the
/// effective uid, which owns the files it makes) or root, who can read them anyway. The daemon
/// serves by the same rule.
public enum SocketPeer {
    /// Whether a peer with this uid may be talked to.
    public static func isTrusted(uid: UInt32) -> Bool {
        uid == geteuid() || uid == 0
    }

    /// The uid of the process at the other end of a connected Unix socket, as the kernel recorded
    /// it when the connection was made (`SO_PEERCRED`); `nil` when the kernel does not say.
    public static func uid(of descriptor: Int32) -> UInt32? {
        var credentials = PeerCredentials()
        var size = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(descriptor, SOL_SOCKET, optionPeerCredentials, &credentials, &size) == 0,
            size == socklen_t(MemoryLayout<PeerCredentials>.size)
        else { return nil }
        return credentials.uid
    }

    /// `SO_PEERCRED`, which Glibc declares only under `_GNU_SOURCE`.
    public static let optionPeerCredentials: Int32 = 17

    /// Linux's `struct ucred`.
    public struct PeerCredentials: Sendable {
        public var pid: Int32 = 0
        public var uid: UInt32 = 0
        public var gid: UInt32 = 0
        public init() {}
    }
}

import Glibc

/// `token` asked of a running daemon, as the full binary asks it (docs/operations.md, "The local
/// API"): one JSON line each way over the daemon's Unix socket, 60 seconds at most.
package enum DaemonTokenClient {
    /// What asking came to.
    package enum Outcome: Equatable, Sendable {
        /// The daemon's token.
        case token(FrontToken)
        /// The daemon refused: its message and exit code, which the full binary prints as they are.
        case refused(message: String, exitCode: Int32)
        /// No daemon there, or none that answered: the store is read instead, as the full binary does.
        case noDaemon
        /// A reply this reader does not take as surely as the full binary's decoder would (more
        /// than a token or a refusal, a value of another type, a key twice, a byte-order mark):
        /// the full binary asks again and reads it.
        case full
    }

    static let timeoutSeconds = 60
    static let maximumReplyBytes = 64 << 20

    static func ask(_ request: FrontRequest.TokenRequest, socket path: String) -> Outcome {
        // The request as the full binary's encoder writes it; names are plain ASCII, nothing to escape.
        var line = #"{"command":"token""#
        if let name = request.name { line += #","account":"\#(name)""# }
        line += #","marginSeconds":\#(request.marginSeconds)}"#
        guard let answer = exchange(line, socket: path, timeoutMilliseconds: timeoutSeconds * 1000) else { return .noDaemon }
        return outcome(reply: answer)
    }

    /// Sends one request line to the daemon at `path` and reads its one reply line, within
    /// `timeoutMilliseconds` each way; `nil` when nothing there answers.
    static func exchange(_ request: String, socket path: String, timeoutMilliseconds: Int) -> [UInt8]? {
        var info = stat()
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard stat(path, &info) == 0, pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var limit = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0, sendAll(descriptor, Array((request + "\n").utf8)) else { return nil }
        return readLine(descriptor, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// What a reply line says, as the full binary's decoder (`DaemonReply`, dates in seconds) reads
    /// it; fuzzed against that decoder (`front-reader`).
    package static func outcome(reply bytes: [UInt8]) -> Outcome {
        guard let reply = JSONValue.parse(bytes), let ok = reply["ok"]?.bool, let error = optional(reply["error"], { $0.string }),
            let exitCode = optional(reply["exitCode"], { $0.number.flatMap { Int32(exactly: $0) } }),
            Set(reply.objectKeys).isSubset(of: ["ok", "error", "exitCode", "token"])
        else { return .full }
        guard let token = reply["token"], token != .null else {
            return .refused(message: error ?? "the daemon gave no token", exitCode: exitCode ?? 1)
        }
        guard let name = token["name"]?.string, let accessToken = token["accessToken"]?.string, let fedramp = token["fedramp"]?.bool,
            let expiry = optional(token["expiresAt"], { $0.number }), let accountID = optional(token["chatgptAccountID"], { $0.string }),
            let warning = optional(token["warning"], { $0.string }),
            Set(token.objectKeys).isSubset(of: ["name", "accessToken", "expiresAt", "chatgptAccountID", "fedramp", "warning"])
        else { return .full }
        guard ok else { return .refused(message: error ?? "the daemon gave no token", exitCode: exitCode ?? 1) }
        // A time Foundation would print otherwise than whole seconds: the full binary prints it.
        guard expiry.map({ $0 == $0.rounded(.towardZero) && $0 >= 0 && $0 <= AccessTokenClaims.latestExpiry }) ?? true else { return .full }
        return .token(
            FrontToken(
                name: name, accessToken: accessToken, expiresAt: expiry.map { Int64($0) }, chatgptAccountID: accountID, fedramp: fedramp,
                warning: warning))
    }

    /// An optional member: `.some(nil)` when absent or null, `.some(value)` when of the type, `nil` otherwise.
    private static func optional<T>(_ value: JSONValue?, _ read: (JSONValue) -> T?) -> T?? {
        guard let value, value != .null else { return .some(nil) }
        return read(value).map { .some($0) }
    }

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
            guard count > 0 else { return line.isEmpty ? nil : line }
            if let newline = buffer[0..<count].firstIndex(of: 0x0A) { return line + buffer[0..<newline] }
            line += buffer[0..<count]
            guard line.count <= maximumReplyBytes else { return nil }
        }
    }
}

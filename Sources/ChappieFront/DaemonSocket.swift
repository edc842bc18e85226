import Glibc

/// One request line to a running daemon and its one reply line, over the daemon's Unix socket, as
/// the full binary's `UnixSocketClient` exchanges them (docs/operations.md, "The local API").
enum DaemonSocket {
    /// The longest reply read, as the full binary's limit.
    static let maximumReplyBytes = 64 << 20

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
            // A read that timed out or failed leaves a line cut short: no answer. Only an end of
            // file ends a line without its newline.
            guard count >= 0 else { return nil }
            guard count > 0 else { return line.isEmpty ? nil : line }
            if let newline = buffer[0..<count].firstIndex(of: 0x0A) { return line + buffer[0..<newline] }
            line += buffer[0..<count]
            guard line.count <= maximumReplyBytes else { return nil }
        }
    }
}

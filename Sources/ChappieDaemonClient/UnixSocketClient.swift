package import Foundation

/// The client's end of the daemon's Unix socket, in plain system calls: connect with a timeout,
/// write a line without SIGPIPE, read a bounded line.
package enum UnixSocketClient {
    /// The most a reply line may be (a `metrics` or `accounts` reply of a large store fits).
    static let maximumReplyBytes = 64 << 20

    /// Connects to `path`; `nil` when nothing listens there, or the listener's queue stayed full
    /// for `timeout` (the timeouts are set before connecting: a full queue blocks a connect).
    static func connect(to path: String, timeout: Duration) -> Int32? {
        guard var address = address(path) else { return nil }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var value = timeval(tv_sec: max(1, Int(timeout.components.seconds)), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Reads one line (without its LF), at most `limit` bytes, within `timeout` in all; `nil` on
    /// error, overflow or a line that takes longer (a peer that trickles bytes).
    static func readLine(_ descriptor: Int32, limit: Int, timeout: Duration) -> Data? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var line = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while clock.now < deadline {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { return line.isEmpty ? nil : line }
            if let newline = buffer[0..<count].firstIndex(of: 0x0A) {
                line.append(contentsOf: buffer[0..<newline])
                return line
            }
            line.append(contentsOf: buffer[0..<count])
            if line.count > limit { return nil }
        }
        return nil
    }

    /// Writes all of `data`; a peer gone is an error here, never a SIGPIPE (MSG_NOSIGNAL).
    static func write(_ descriptor: Int32, _ data: Data) {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if written <= 0 { return }
                offset += written
            }
        }
    }

    /// The address of a socket at `path`; `nil` when the path does not fit `sun_path`.
    package static func address(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    /// How long a socket path may be, in bytes.
    package static var maximumPathBytes: Int { MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1 }
}

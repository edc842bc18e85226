import Foundation

/// A Unix-domain stream socket: the daemon's local API. One JSON request line in, one JSON reply
/// line out, per connection.
enum UnixSocket {
    /// The most a request line may be.
    static let maximumRequestBytes = 64 * 1024

    /// Binds and listens at `path` with mode 0600. An old socket there is replaced; anything else
    /// (a regular file, a link, a directory) is refused and left as it is: `--socket` pointed at
    /// the wrong path must not delete a file.
    static func listen(at path: String) throws(ServiceError) -> Int32 {
        var existing = stat()
        if lstat(path, &existing) == 0 {
            guard existing.st_mode & S_IFMT == S_IFSOCK else {
                throw ServiceError(.configuration, "\(path) exists and is not a socket; chappie will not replace it: choose another --socket path")
            }
        }
        var address = try socketAddress(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ServiceError(.configuration, "cannot create a socket: \(String(cString: strerror(errno)))") }
        unlink(path)
        // The socket is created under a restrictive umask so that it is never, even briefly, open to others.
        let oldMask = umask(0o177)
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(oldMask)
        guard bound == 0, chmod(path, 0o600) == 0, Glibc.listen(descriptor, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw ServiceError(.configuration, "cannot listen on \(path): \(reason)")
        }
        return descriptor
    }

    /// Connects to `path`; `nil` when nothing listens there.
    static func connect(to path: String, timeout: Duration = .seconds(30)) -> Int32? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0, var address = try? socketAddress(path) else { return nil }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        setTimeout(descriptor, timeout)
        return descriptor
    }

    /// The user id of the process at the other end.
    static func peerUserID(_ descriptor: Int32) -> uid_t? {
        // Linux's `struct ucred` (pid, uid, gid) and SO_PEERCRED (17), which Glibc only declares
        // under _GNU_SOURCE.
        struct PeerCredentials {
            var pid: Int32 = 0
            var uid: UInt32 = 0
            var gid: UInt32 = 0
        }
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(descriptor, SOL_SOCKET, 17, &credentials, &length) == 0 else { return nil }
        return credentials.uid
    }

    /// Reads one line (without its LF), at most `maximumRequestBytes`; `nil` on error or overflow.
    static func readLine(_ descriptor: Int32) -> Data? {
        var line = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { return line.isEmpty ? nil : line }
            if let newline = buffer[0..<count].firstIndex(of: 0x0A) {
                line.append(contentsOf: buffer[0..<newline])
                return line
            }
            line.append(contentsOf: buffer[0..<count])
            if line.count > maximumRequestBytes { return nil }
        }
    }

    /// Writes all of `data`.
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

    /// Makes a descriptor non-blocking and close-on-exec.
    static func setNonBlocking(_ descriptor: Int32) {
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
    }

    static func setTimeout(_ descriptor: Int32, _ timeout: Duration) {
        var value = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    private static func socketAddress(_ path: String) throws(ServiceError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw ServiceError(.configuration, "the socket path \(path) is longer than \(capacity - 1) bytes; choose a shorter --socket")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }
}

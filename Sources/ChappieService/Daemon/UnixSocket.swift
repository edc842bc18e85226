import ChappieSystem
import Foundation

/// The daemon's end of its Unix-domain socket (the client's is `DaemonSocketExchange`). One JSON
/// request line in, one JSON reply line out, per connection.
enum UnixSocket {
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
        guard DaemonSocketExchange.address(path) != nil else {
            throw ServiceError(
                .configuration, "the socket path \(path) is longer than \(DaemonSocketExchange.maximumPathBytes) bytes; choose a shorter --socket")
        }
        // Bound and listening under a name of its own first, then renamed into place: the path
        // appears only once a client can connect.
        let staging = path + ".\(getpid()).new"
        guard var stagingAddress = DaemonSocketExchange.address(staging) else {
            throw ServiceError(
                .configuration,
                "the socket path \(path) is longer than \(DaemonSocketExchange.maximumPathBytes - 16) bytes; choose a shorter --socket")
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ServiceError(.configuration, "cannot create a socket: \(String(cString: strerror(errno)))") }
        unlink(staging)
        // The socket is created under a restrictive umask so that it is never, even briefly, open to others.
        let oldMask = umask(0o177)
        let bound = withUnsafePointer(to: &stagingAddress) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(oldMask)
        guard bound == 0, chmod(staging, 0o600) == 0, Glibc.listen(descriptor, 64) == 0, rename(staging, path) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            unlink(staging)
            throw ServiceError(.configuration, "cannot listen on \(path): \(reason)")
        }
        return descriptor
    }

    /// A socket file as it was when this daemon made it (device and inode).
    struct Identity: Sendable {
        let path: String
        let device: UInt64
        let inode: UInt64

        /// The socket at `path` now; `nil` when there is none.
        init?(of path: String) {
            var status = stat()
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { return nil }
            self.path = path
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
        }

        /// Removes the socket if it is still this one.
        func unlinkIfUnchanged() {
            guard let now = Identity(of: path), now.device == device, now.inode == inode else { return }
            unlink(path)
        }
    }
}

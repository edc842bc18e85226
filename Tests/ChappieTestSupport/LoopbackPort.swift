import Glibc

/// A loopback port nothing listens on: a socket bound to port 0 and never listened on.
public func closedLoopbackPort() throws -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
            bind(socket, generic, length) == 0 && getsockname(socket, generic, &length) == 0
        }
    }
    guard bound else {
        close(socket)
        throw EmulatorHarnessError(message: "could not bind a loopback socket")
    }
    // Kept bound (never listening) for the rest of the run: connections to it are refused, and no
    // other test or process running meanwhile can take the port and answer.
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Holds a loopback port that was just given back (an emulator stopped), so that no other test's
/// server takes it while a test expects nothing to answer there: a socket bound to it, never
/// listened on, kept for the rest of the run. Without `SO_REUSEADDR`, so that a server that sets it
/// cannot bind over it. `false` when the port could not be held (taken already, or a closed
/// connection still waits on it).
@discardableResult
public func holdLoopbackPort(_ port: Int) -> Bool {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let bound = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    if !bound { close(socket) }
    return bound
}

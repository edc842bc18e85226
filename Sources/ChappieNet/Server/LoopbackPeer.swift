import Foundation
import NIOCore

/// Which user a loopback TCP connection comes from, as the kernel lists sockets in
/// `/proc/net/tcp` and `/proc/net/tcp6`: the entry whose local end is the peer's address and whose
/// remote end is ours belongs to the process that connected, and names its uid. A listener on
/// 127.0.0.1 can then serve its own user only, whatever another local user learnt of its URLs.
enum LoopbackPeer {
    /// The uid of the process at the other end of `channel`, or `nil` when it cannot be told.
    static func uid(of channel: any Channel) -> uid_t? {
        guard let peer = channel.remoteAddress, let local = channel.localAddress, let peerPort = peer.port, let localPort = local.port,
            let peerIP = peer.ipAddress, let localIP = local.ipAddress
        else { return nil }
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            for line in lines(of: table).dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 7, let (ownAddress, ownPort) = endpoint(fields[1]), let (otherAddress, otherPort) = endpoint(fields[2]) else {
                    continue
                }
                if ownPort == peerPort, otherPort == localPort, ownAddress == normalized(peerIP), otherAddress == normalized(localIP) {
                    return uid_t(fields[7])
                }
            }
        }
        return nil
    }

    /// Every line of a /proc file, read to its end (its size says 0, and one read may return one page).
    private static func lines(of path: String) -> [Substring] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        var data = Data()
        while let chunk = try? handle.read(upToCount: 65536), !chunk.isEmpty { data += chunk }
        return String(decoding: data, as: UTF8.self).split(separator: "\n")
    }

    /// An address of `/proc/net/tcp*` (`0100007F:D431`: the address in the kernel's byte order,
    /// the port big-endian) as text and port; IPv4-mapped IPv6 addresses read as IPv4.
    static func endpoint(_ field: Substring) -> (String, Int)? {
        let parts = field.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1], radix: 16) else { return nil }
        let hex = Array(parts[0])
        guard hex.count == 8 || hex.count == 32 else { return nil }
        // Each 32-bit word is in host (little-endian) order.
        var bytes: [UInt8] = []
        for word in stride(from: 0, to: hex.count, by: 8) {
            let chunk = (0..<4).compactMap { UInt8(String(hex[word + $0 * 2...word + $0 * 2 + 1]), radix: 16) }
            guard chunk.count == 4 else { return nil }
            bytes += chunk.reversed()
        }
        if bytes.count == 4 { return (bytes.map(String.init).joined(separator: "."), port) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return (bytes[12...].map(String.init).joined(separator: "."), port)
        }
        return (stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":"), port)
    }

    /// An address as ``endpoint(_:)`` writes it (IPv4-mapped IPv6 as IPv4, IPv6 in eight groups).
    private static func normalized(_ address: String) -> String {
        if address.hasPrefix("::ffff:") { return String(address.dropFirst("::ffff:".count)) }
        guard address.contains(":") else { return address }
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
    }
}

public import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization
import WSCompression
import WSCore

/// Where a `ws`/`wss` URL points, checked as ``ChappieHTTPClient`` checks its requests.
struct WebSocketTarget: Sendable {
    let host: String
    let port: Int
    let secure: Bool
    let pathAndQuery: String

    init(url: URL, headers: ChappieHTTPHeaders) throws {
        guard let scheme = url.scheme?.lowercased(), scheme == "ws" || scheme == "wss", let host = url.host, !host.isEmpty else {
            throw ChappieHTTPClientError(code: .invalidURL, message: "not an absolute ws(s) URL: \(url.redactedTarget)")
        }
        if scheme == "ws" && headers.contains("Authorization") && !ChappieHTTPClient.isLoopback(host: host) {
            throw ChappieHTTPClientError(
                code: .insecureAuthorization,
                message: "refusing to send credentials over plain ws to \(host); use wss (only loopback may use ws)")
        }
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.secure = scheme == "wss"
        self.port = url.port ?? (secure ? 443 : 80)
        let path = url.path.isEmpty ? "/" : url.path
        self.pathAndQuery = path + (url.query.map { "?" + $0 } ?? "")
    }

    /// The `Host` header: the port only when it is not the scheme's default.
    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// The TLS server name: none for an address literal.
    var serverName: String? {
        host.contains(":") || host.split(separator: ".").allSatisfy({ UInt8($0) != nil }) ? nil : host
    }
}

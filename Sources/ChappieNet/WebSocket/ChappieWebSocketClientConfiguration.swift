public import ChappieCore
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

/// How a ``ChappieWebSocketClient`` connects and how long it waits.
public struct ChappieWebSocketClientConfiguration: Sendable {
    /// The longest the TCP connect, TLS handshake and upgrade may take together. Default: 15 seconds.
    public var connectTimeout: Duration
    /// The longest the connection may go without receiving anything. Default: 300 seconds.
    public var idleTimeout: Duration
    /// How long closing waits for the server's close frame. Default: 2 seconds.
    public var closeTimeout: Duration
    /// The largest message accepted (after decompression). Default: 16 MiB.
    public var maximumMessageSize: Int
    /// The largest single frame accepted. Default: 16 MiB.
    public var maximumFrameSize: Int
    /// Whether to offer permessage-deflate (RFC 7692). Default: `true`.
    public var permessageDeflate: Bool
    /// The `User-Agent` of the upgrade request. Default: `chappie/<version> (<os>; <arch>)`.
    public var userAgent: String
    /// The certificate authorities `wss` trusts. Default: the environment's, as for HTTPS
    /// (``ChappieTLSTrust/environment``).
    public var trust: ChappieTLSTrust

    /// Creates a configuration; every parameter has the default documented on its property.
    public init(
        connectTimeout: Duration = .seconds(15), idleTimeout: Duration = .seconds(300), closeTimeout: Duration = .seconds(2),
        maximumMessageSize: Int = 16 << 20, maximumFrameSize: Int = 16 << 20, permessageDeflate: Bool = true,
        userAgent: String = ChappieHTTPClientConfiguration().userAgent, trust: ChappieTLSTrust = .environment
    ) {
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.closeTimeout = closeTimeout
        self.maximumMessageSize = maximumMessageSize
        self.maximumFrameSize = maximumFrameSize
        self.permessageDeflate = permessageDeflate
        self.userAgent = userAgent
        self.trust = trust
    }
}

// MARK: - Parts

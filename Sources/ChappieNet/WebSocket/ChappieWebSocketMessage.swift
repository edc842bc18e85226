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

/// One message of a WebSocket session.
public enum ChappieWebSocketMessage: Sendable, Equatable {
    /// A text message.
    case text(String)
    /// A binary message.
    case binary(Data)
}

/// The server answered the upgrade request with something other than `101 Switching Protocols`.
public struct WebSocketUpgradeRefused: Error, Sendable, CustomStringConvertible {
    /// The HTTP status, such as 401, 404 or 429.
    public let status: Int
    /// The response's headers (rate-limit headers among them).
    public let headers: ChappieHTTPHeaders
    /// The start of the response's body (at most 64 KiB).
    public let body: Data

    /// Says the status only: bodies and headers may carry account details.
    public var description: String { "the server refused the WebSocket upgrade with HTTP \(status)" }
}

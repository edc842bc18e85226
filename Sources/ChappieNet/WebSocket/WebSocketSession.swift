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

/// The open connection, inside ``ChappieWebSocketClient/connect(url:headers:_:)``'s body.
public struct WebSocketSession {
    /// The headers of the server's `101 Switching Protocols` answer.
    public let responseHeaders: ChappieHTTPHeaders
    private var inbound: WebSocketInboundMessageStream.AsyncIterator
    private let outbound: WebSocketOutboundWriter
    private let idle: IdleWatch
    private let host: String

    init(
        responseHeaders: ChappieHTTPHeaders, inbound: WebSocketInboundMessageStream.AsyncIterator, outbound: WebSocketOutboundWriter,
        idle: IdleWatch, host: String
    ) {
        self.responseHeaders = responseHeaders
        self.inbound = inbound
        self.outbound = outbound
        self.idle = idle
        self.host = host
    }

    /// Sends one text message.
    public func send(_ text: String) async throws {
        try await outbound.write(.text(text))
    }

    /// The next whole message; `nil` once the server closed the connection (or it broke).
    ///
    /// - Throws: ``ChappieHTTPClientError`` with `timedOut` when nothing arrived within the idle timeout.
    public mutating func receive() async throws -> ChappieWebSocketMessage? {
        let message = try await inbound.next()
        if message == nil, idle.expired == .idle {
            throw ChappieHTTPClientError(code: .timedOut, message: "no WebSocket message from \(host) within the idle timeout")
        }
        switch message {
        case .text(let text)?: return .text(text)
        case .binary(let buffer)?: return .binary(Data(buffer.readableBytesView))
        case nil: return nil
        }
    }
}

/// The context WSCore's handler wants: a logger.
struct SessionContext: WebSocketContext {
    let logger: Logger
}

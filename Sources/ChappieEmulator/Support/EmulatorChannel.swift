import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOSSL
import NIOWebSocket
import Synchronization
import WSCompression
@_spi(WSInternal) import WSCore

/// The emulator's connections: HTTP/1.1, or a WebSocket when the first request is an upgrade the
/// ``WebSocketRoutes`` accept.
///
/// hummingbird-websocket's channel answers every refused upgrade with an empty 400; the real
/// backend answers with the status that says why (401 for a bad token, 404, 429) and an error body,
/// and a client has to tell them apart. This channel writes the refusal the ``WebSocketRoutes``
/// decided on, then closes the connection.
struct EmulatorChannel: ServerChildChannel, HTTPChannelHandler {
    /// What the first request of a connection became.
    enum Outcome: Sendable {
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, Reply)
        case webSocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, WebSocketRoutes.Session, [any WebSocketExtension])
    }

    /// The connection and its outcome.
    struct Value: ServerChildChannelValue {
        let outcome: EventLoopFuture<Outcome>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let webSocket: WebSocketRoutes
    /// TLS in front of HTTP, when the emulator serves HTTPS.
    let tls: NIOSSLContext?

    /// The server builder for `Application(server:)`.
    static func builder(webSocket: WebSocketRoutes, tls: NIOSSLContext?) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in EmulatorChannel(responder: responder, webSocket: webSocket, tls: tls) }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
            let secure = tls != nil
            let decision = UpgradeDecision()
            let webSocket = self.webSocket
            let upgrader = NIOTypedWebSocketServerUpgrader<Outcome>(
                maxFrameSize: 16 << 20,
                shouldUpgrade: { channel, head in
                    let promise = channel.eventLoop.makePromise(of: NIOHTTP1.HTTPHeaders?.self)
                    promise.completeWithTask {
                        let session: WebSocketRoutes.Session
                        switch await webSocket.accept(head, clientPort: channel.remoteAddress?.port) {
                        case .success(let accepted): session = accepted
                        case .failure(let refusal):
                            decision.set(.refused(refusal.reply))
                            return nil
                        }
                        let builders = [WebSocketExtensionFactory.perMessageDeflate(maxDecompressedFrameSize: 16 << 20).build()]
                        let (extensionHeaders, extensions) = try builders.serverExtensionNegotiation(requestHeaders: Self.fields(head.headers))
                        decision.set(.accepted(session, extensions))
                        var headers = NIOHTTP1.HTTPHeaders(session.headers)
                        for field in extensionHeaders { headers.add(name: field.name.rawName, value: field.value) }
                        return headers
                    }
                    return promise.futureResult
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        let asyncChannel = try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        guard case .accepted(let session, let extensions)? = decision.get() else { throw ChannelError.inappropriateOperationForState }
                        return .webSocket(asyncChannel, session, extensions)
                    }
                })
            let upgrade = NIOTypedHTTPServerUpgradeConfiguration<Outcome>(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: secure))
                        try channel.pipeline.syncOperations.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
                        let http = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        // NIO does not pass on the head of a refused upgrade: answer it here.
                        if case .refused(let reply)? = decision.get() { return .refused(http, reply) }
                        return .http(http)
                    }
                })
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration(upgradeConfiguration: upgrade)
            configuration.enablePipelining = false
            configuration.enableErrorHandling = false
            configuration.enableResponseHeaderValidation = false
            let outcome = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            return Value(outcome: outcome, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.outcome.get() {
            case .http(let channel):
                await handleHTTP(asyncChannel: channel, logger: logger)
            case .refused(let channel, let reply):
                try await channel.executeThenClose { _, outbound in
                    guard case .bytes(let body) = reply.body else { return }
                    var fields = HTTPFields()
                    for (name, value) in reply.headers {
                        if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
                    }
                    fields[.contentLength] = String(body.count)
                    fields[.connection] = "close"
                    try await outbound.write(contentsOf: [
                        .head(HTTPResponse(status: .init(code: reply.status), headerFields: fields)), .body(ByteBuffer(bytes: body)), .end(nil),
                    ])
                }
            case .webSocket(let channel, let session, let extensions):
                _ = try await WebSocketHandler.handle(
                    type: .server,
                    configuration: .init(extensions: extensions, autoPing: .disabled, validateUTF8: true, maxFrameSize: 16 << 20),
                    asyncChannel: channel, context: Context(logger: logger),
                    handler: { inbound, outbound, _ in try await session.run(inbound, outbound) })
            }
        } catch {
            logger.debug("connection ended: \(error)")
        }
    }

    /// NIO's header list as swift-http-types' fields.
    private static func fields(_ headers: NIOHTTP1.HTTPHeaders) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        return fields
    }

    /// The context WSCore's handler wants.
    struct Context: WebSocketContext {
        let logger: Logger
    }
}

/// What the upgrade decision was, from the decision to the pipeline it sets up.
private final class UpgradeDecision: Sendable {
    enum Value: Sendable {
        case accepted(WebSocketRoutes.Session, [any WebSocketExtension])
        case refused(Reply)
    }

    private let value = Mutex<Value?>(nil)

    func set(_ decision: Value) {
        value.withLock { $0 = decision }
    }

    func get() -> Value? {
        value.withLock { $0 }
    }
}

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
@_spi(WSInternal) import WSCore

/// Opens WebSocket connections (RFC 6455) over `ws://` or `wss://`, one session per call.
///
/// Built on SwiftNIO's typed client upgrader, so a refused upgrade keeps its status, headers and
/// body (a 401 can be told from a 404) and an accepted one keeps its response headers. Framing,
/// ping/pong, the close handshake and permessage-deflate come from swift-websocket (WSCore,
/// WSCompression). `wss` verifies the server's certificate against the system's trust store.
///
/// ```swift
/// let reply = try await WebSocketClient().connect(url: url, headers: headers) { session in
///     try await session.send("hello")
///     return try await session.receive()
/// }
/// ```
public struct WebSocketClient: Sendable {
    /// Timeouts, limits and extensions.
    public var configuration: WebSocketClientConfiguration

    /// Creates a client.
    public init(configuration: WebSocketClientConfiguration = WebSocketClientConfiguration()) {
        self.configuration = configuration
    }

    /// Connects, upgrades, runs `body` with the open session, then closes the connection.
    ///
    /// - Throws: ``HTTPClientError`` (`invalidURL`, `insecureAuthorization`, `connectFailed`,
    ///   `tlsFailed`, `timedOut`, `connectionLost`), ``WebSocketUpgradeRefused`` when the server
    ///   answers the upgrade with another status, whatever `body` throws, or `CancellationError`.
    public func connect<Result: Sendable>(
        url: URL, headers: HTTPHeaders, _ body: @escaping @Sendable (inout WebSocketSession) async throws -> Result
    ) async throws -> Result {
        let target = try WebSocketTarget(url: url, headers: headers)
        let idle = IdleWatch()
        let upgrade: WebSocketUpgrade
        do {
            upgrade = try await open(target, headers: headers, idle: idle)
        } catch let error as HTTPClientError {
            throw error
        } catch let error as WebSocketUpgradeRefused {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw Self.describe(error, host: target.host, during: "connecting")
        }
        let (channel, responseHeaders, extensions) = upgrade
        // What the body returned or threw, kept here: WSCore does not rethrow it on every path (an
        // unclean TLS shutdown after the close frame returns normally).
        let outcome = Mutex<Swift.Result<Result, any Error>?>(nil)
        let configuration = self.configuration
        do {
            _ = try await WebSocketHandler.handle(
                type: .client,
                configuration: .init(
                    extensions: extensions, autoPing: .disabled, closeTimeout: configuration.closeTimeout, validateUTF8: true,
                    ignoreUncleanSSLShutdownErrors: true, maxFrameSize: configuration.maximumFrameSize),
                asyncChannel: channel,
                context: SessionContext(logger: Self.logger),
                handler: { inbound, outbound, _ in
                    var session = WebSocketSession(
                        responseHeaders: responseHeaders, inbound: inbound.messages(maxSize: configuration.maximumMessageSize).makeAsyncIterator(),
                        outbound: outbound, idle: idle, host: target.host)
                    do {
                        let result = try await body(&session)
                        outcome.withLock { $0 = .success(result) }
                    } catch {
                        outcome.withLock { $0 = .failure(error) }
                        throw error
                    }
                })
        } catch {
            if case .failure(let bodyError)? = outcome.withLock({ $0 }) { throw bodyError }
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            if let error = error as? HTTPClientError { throw error }
            throw Self.describe(error, host: target.host, during: "reading")
        }
        switch outcome.withLock({ $0 }) {
        case .success(let result)?:
            return result
        case .failure(let error)?:
            throw error
        case nil:
            try Task.checkCancellation()
            throw HTTPClientError(code: .connectionLost, message: "the WebSocket to \(target.host) closed")
        }
    }

    // MARK: Opening

    private typealias WebSocketUpgrade = (NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, HTTPHeaders, [any WebSocketExtension])

    private enum UpgradeOutcome: Sendable {
        case upgraded(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, HTTPHeaders, [any WebSocketExtension])
        case refused(EventLoopFuture<WebSocketUpgradeRefused>)
    }

    private func open(_ target: WebSocketTarget, headers: HTTPHeaders, idle: IdleWatch) async throws -> WebSocketUpgrade {
        let configuration = self.configuration
        let extensionBuilders = configuration.permessageDeflate
            ? [WebSocketExtensionFactory.perMessageDeflate(maxDecompressedFrameSize: configuration.maximumMessageSize).build()] : []
        let tls = try target.secure ? Self.tlsContext() : nil
        let deadline = NIODeadline.now() + TimeAmount(configuration.connectTimeout)
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(TimeAmount(configuration.connectTimeout))
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
        let upgradeFuture: EventLoopFuture<UpgradeOutcome> = try await bootstrap.connect(host: target.host, port: target.port) { channel in
            channel.eventLoop.makeCompletedFuture {
                let sync = channel.pipeline.syncOperations
                if let tls {
                    try sync.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: target.serverName))
                }
                try sync.addHandler(IdleStateHandler(readTimeout: TimeAmount(configuration.idleTimeout)))
                try sync.addHandler(IdleCloser(watch: idle))
                var requestHeaders = NIOHTTP1.HTTPHeaders()
                requestHeaders.add(name: "Host", value: target.hostHeader)
                requestHeaders.add(name: "User-Agent", value: configuration.userAgent)
                for field in headers { requestHeaders.add(name: field.name, value: field.value) }
                for builder in extensionBuilders { requestHeaders.add(name: "Sec-WebSocket-Extensions", value: builder.clientRequestHeader()) }
                let upgrader = NIOTypedWebSocketClientUpgrader<UpgradeOutcome>(
                    maxFrameSize: configuration.maximumFrameSize,
                    upgradePipelineHandler: { channel, head in
                        channel.eventLoop.makeCompletedFuture {
                            let asyncChannel = try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(wrappingChannelSynchronously: channel)
                            let fields = HTTPHeaders(head.headers)
                            var negotiated = HTTPFields()
                            for (name, value) in head.headers {
                                if let name = HTTPField.Name(name) { negotiated.append(HTTPField(name: name, value: value)) }
                            }
                            let extensions = try extensionBuilders.buildClientExtensions(from: negotiated)
                            return .upgraded(asyncChannel, fields, extensions)
                        }
                    })
                let upgradeConfiguration = NIOTypedHTTPClientUpgradeConfiguration<UpgradeOutcome>(
                    upgradeRequestHead: HTTPRequestHead(version: .http1_1, method: .GET, uri: target.pathAndQuery, headers: requestHeaders),
                    upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in
                        channel.eventLoop.makeCompletedFuture {
                            let refusal = channel.eventLoop.makePromise(of: WebSocketUpgradeRefused.self)
                            try channel.pipeline.syncOperations.addHandler(RefusalCollector(promise: refusal))
                            return .refused(refusal.futureResult)
                        }
                    })
                var pipeline = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: upgradeConfiguration)
                pipeline.leftOverBytesStrategy = .forwardBytes
                return try sync.configureUpgradableHTTPClientPipeline(configuration: pipeline)
            }
        }
        // The connect timeout covers the TLS handshake and the upgrade too.
        let timeout = upgradeFuture.eventLoop.scheduleTask(deadline: deadline) { idle.expire(during: .connect) }
        defer { timeout.cancel() }
        let outcome: UpgradeOutcome
        do {
            outcome = try await withTaskCancellationHandler {
                try await upgradeFuture.get()
            } onCancel: {
                upgradeFuture.whenSuccess { outcome in
                    if case .upgraded(let channel, _, _) = outcome { channel.channel.close(promise: nil) }
                }
            }
        } catch {
            try Task.checkCancellation()
            if idle.expired == .connect {
                throw HTTPClientError(code: .timedOut, message: "the WebSocket upgrade at \(target.host) took longer than \(configuration.connectTimeout)")
            }
            throw error
        }
        switch outcome {
        case .upgraded(let channel, let headers, let extensions):
            return (channel, headers, extensions)
        case .refused(let refusal):
            throw try await refusal.get()
        }
    }

    /// One TLS context for every connection: loading the system's trust store is not cheap.
    private static func tlsContext() throws -> NIOSSLContext {
        try sharedTLS.get()
    }

    private static let sharedTLS: Swift.Result<NIOSSLContext, any Error> = Swift.Result {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .fullVerification
        tls.trustRoots = .default
        return try NIOSSLContext(configuration: tls)
    }

    private static let logger = Logger(label: "chappie.websocket", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A NIO or TLS failure as an ``HTTPClientError`` naming the host only.
    private static func describe(_ error: any Error, host: String, during phase: String) -> HTTPClientError {
        switch error {
        case is NIOSSLError, is NIOSSLExtraError, is BoringSSLError:
            return HTTPClientError(code: .tlsFailed, message: "TLS with \(host) failed: \(error)")
        case let error as NIOConnectionError:
            return HTTPClientError(code: .connectFailed, message: "could not connect to \(host): \(error.connectionErrors.first.map { "\($0.error)" } ?? "no address")")
        case ChannelError.connectTimeout:
            return HTTPClientError(code: .connectFailed, message: "could not connect to \(host) in time")
        default:
            return HTTPClientError(code: .connectionLost, message: "the WebSocket to \(host) failed while \(phase): \(error)")
        }
    }
}

/// The open connection, inside ``WebSocketClient/connect(url:headers:_:)``'s body.
public struct WebSocketSession {
    /// The headers of the server's `101 Switching Protocols` answer.
    public let responseHeaders: HTTPHeaders
    private var inbound: WebSocketInboundMessageStream.AsyncIterator
    private let outbound: WebSocketOutboundWriter
    private let idle: IdleWatch
    private let host: String

    init(
        responseHeaders: HTTPHeaders, inbound: WebSocketInboundMessageStream.AsyncIterator, outbound: WebSocketOutboundWriter,
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
    /// - Throws: ``HTTPClientError`` with `timedOut` when nothing arrived within the idle timeout.
    public mutating func receive() async throws -> WebSocketMessage? {
        let message = try await inbound.next()
        if message == nil, idle.expired == .idle {
            throw HTTPClientError(code: .timedOut, message: "no WebSocket message from \(host) within the idle timeout")
        }
        switch message {
        case .text(let text)?: return .text(text)
        case .binary(let buffer)?: return .binary(Data(buffer.readableBytesView))
        case nil: return nil
        }
    }
}

/// One message of a WebSocket session.
public enum WebSocketMessage: Sendable, Equatable {
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
    public let headers: HTTPHeaders
    /// The start of the response's body (at most 64 KiB).
    public let body: Data

    /// Says the status only: bodies and headers may carry account details.
    public var description: String { "the server refused the WebSocket upgrade with HTTP \(status)" }
}

/// How a ``WebSocketClient`` connects and how long it waits.
public struct WebSocketClientConfiguration: Sendable {
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
    /// The `User-Agent` of the upgrade request. Default: `chappie/<version>`.
    public var userAgent: String

    /// Creates a configuration; every parameter has the default documented on its property.
    public init(
        connectTimeout: Duration = .seconds(15), idleTimeout: Duration = .seconds(300), closeTimeout: Duration = .seconds(2),
        maximumMessageSize: Int = 16 << 20, maximumFrameSize: Int = 16 << 20, permessageDeflate: Bool = true,
        userAgent: String = HTTPClientConfiguration().userAgent
    ) {
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.closeTimeout = closeTimeout
        self.maximumMessageSize = maximumMessageSize
        self.maximumFrameSize = maximumFrameSize
        self.permessageDeflate = permessageDeflate
        self.userAgent = userAgent
    }
}

// MARK: - Parts

/// Where a `ws`/`wss` URL points, checked as ``HTTPClient`` checks its requests.
struct WebSocketTarget: Sendable {
    let host: String
    let port: Int
    let secure: Bool
    let pathAndQuery: String

    init(url: URL, headers: HTTPHeaders) throws {
        guard let scheme = url.scheme?.lowercased(), scheme == "ws" || scheme == "wss", let host = url.host, !host.isEmpty else {
            throw HTTPClientError(code: .invalidURL, message: "not an absolute ws(s) URL: \(url.redactedTarget)")
        }
        if scheme == "ws" && headers.contains("Authorization") && !HTTPClient.isLoopback(host: host) {
            throw HTTPClientError(
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

/// Which timer ended a connection, if one did.
final class IdleWatch: Sendable {
    enum Phase: Sendable, Equatable { case connect, idle }
    private let state = Mutex<(phase: Phase?, channel: (any Channel)?)>((nil, nil))

    var expired: Phase? { state.withLock { $0.phase } }

    func watch(_ channel: any Channel) {
        state.withLock { $0.channel = channel }
    }

    /// Records why and closes the channel.
    func expire(during phase: Phase) {
        let channel = state.withLock { state -> (any Channel)? in
            if state.phase == nil { state.phase = phase }
            return state.channel
        }
        channel?.close(promise: nil)
    }
}

/// Closes the channel when `IdleStateHandler` says nothing was read for the idle timeout.
final class IdleCloser: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny
    private let watch: IdleWatch

    init(watch: IdleWatch) {
        self.watch = watch
    }

    func handlerAdded(context: ChannelHandlerContext) {
        watch.watch(context.channel)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? IdleStateHandler.IdleStateEvent, event == .read {
            watch.expire(during: .idle)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}

/// Gathers a refused upgrade's response (head and up to 64 KiB of body).
final class RefusalCollector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    private let promise: EventLoopPromise<WebSocketUpgradeRefused>
    private var head: HTTPResponseHead?
    private var body = Data()
    private var completed = false

    init(promise: EventLoopPromise<WebSocketUpgradeRefused>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body(let buffer):
            if body.count < 64 << 10 { body.append(contentsOf: buffer.readableBytesView.prefix((64 << 10) - body.count)) }
        case .end:
            complete()
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        complete()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        complete()
        context.close(promise: nil)
    }

    private func complete() {
        guard !completed else { return }
        completed = true
        guard let head else {
            promise.fail(HTTPClientError(code: .connectionLost, message: "the connection closed before the upgrade was answered"))
            return
        }
        promise.succeed(WebSocketUpgradeRefused(status: Int(head.status.code), headers: HTTPHeaders(head.headers), body: body))
    }
}

/// The context WSCore's handler wants: a logger.
struct SessionContext: WebSocketContext {
    let logger: Logger
}

extension HTTPHeaders {
    /// NIO's header list as chappie's.
    init(_ headers: NIOHTTP1.HTTPHeaders) {
        self.init()
        for (name, value) in headers { add(name: name, value: value) }
    }
}

extension TimeAmount {
    /// A Swift `Duration` as NIO's time amount.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

import ChappieCore
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
// swift-websocket keeps its client parts (the frame handler, the extensions' negotiation) behind
// its `WSInternal` SPI. chappie uses that SPI in this file and in the emulator's channel, nowhere
// else; Package.swift holds the package to 1.6.x, as an SPI may change in any minor release.
@_spi(WSInternal) import WSCore

/// Opens WebSocket connections (RFC 6455) over `ws://` or `wss://`, one session per call.
///
/// Built on SwiftNIO's typed client upgrader, so a refused upgrade keeps its status, headers and
/// body (a 401 can be told from a 404) and an accepted one keeps its response headers. Framing,
/// ping/pong, the close handshake and permessage-deflate come from swift-websocket (WSCore,
/// WSCompression). `wss` verifies the server's certificate against the system's trust store.
///
/// ```swift
/// let reply = try await ChappieWebSocketClient().connect(url: url, headers: headers) { session in
///     try await session.send("hello")
///     return try await session.receive()
/// }
/// ```
public struct ChappieWebSocketClient: Sendable {
    /// Timeouts, limits and extensions.
    public var configuration: ChappieWebSocketClientConfiguration

    /// Creates a client.
    public init(configuration: ChappieWebSocketClientConfiguration = ChappieWebSocketClientConfiguration()) {
        self.configuration = configuration
    }

    /// Connects, upgrades, runs `body` with the open session, then closes the connection.
    ///
    /// - Throws: ``ChappieHTTPClientError`` (`invalidURL`, `insecureAuthorization`, `connectFailed`,
    ///   `tlsFailed`, `timedOut`, `connectionLost`), ``WebSocketUpgradeRefused`` when the server
    ///   answers the upgrade with another status, whatever `body` throws, or `CancellationError`.
    public func connect<Result: Sendable>(
        url: URL, headers: ChappieHTTPHeaders, _ body: @escaping @Sendable (inout WebSocketSession) async throws -> Result
    ) async throws -> Result {
        let target = try WebSocketTarget(url: url, headers: headers)
        let idle = IdleWatch()
        let upgrade: WebSocketUpgrade
        do {
            upgrade = try await open(target, headers: headers, idle: idle)
        } catch let error as ChappieHTTPClientError {
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
            if let error = error as? ChappieHTTPClientError { throw error }
            throw Self.describe(error, host: target.host, during: "reading")
        }
        switch outcome.withLock({ $0 }) {
        case .success(let result)?:
            return result
        case .failure(let error)?:
            throw error
        case nil:
            try Task.checkCancellation()
            throw ChappieHTTPClientError(code: .connectionLost, message: "the WebSocket to \(target.host) closed")
        }
    }

    // MARK: Opening

    private typealias WebSocketUpgrade = (NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, ChappieHTTPHeaders, [any WebSocketExtension])

    private enum UpgradeOutcome: Sendable {
        case upgraded(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, ChappieHTTPHeaders, [any WebSocketExtension])
        case refused(EventLoopFuture<WebSocketUpgradeRefused>)
    }

    private func open(_ target: WebSocketTarget, headers: ChappieHTTPHeaders, idle: IdleWatch) async throws -> WebSocketUpgrade {
        let configuration = self.configuration
        let extensionBuilders =
            configuration.permessageDeflate
            ? [WebSocketExtensionFactory.perMessageDeflate(maxDecompressedFrameSize: configuration.maximumMessageSize).build()] : []
        let tls = try target.secure ? Self.tlsContext(configuration.trust) : nil
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
                            let fields = ChappieHTTPHeaders(head.headers)
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
                throw ChappieHTTPClientError(
                    code: .timedOut, message: "the WebSocket upgrade at \(target.host) took longer than \(configuration.connectTimeout)")
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

    /// One TLS context per trust, kept for every connection: loading a trust store is not cheap.
    private static func tlsContext(_ trust: ChappieTLSTrust) throws -> NIOSSLContext {
        if let kept = tlsContexts.withLock({ $0[trust] }) { return kept }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .fullVerification
        // The files are checked as libcurl's are, so that both clients fail alike on a bad one.
        try trust.checkFiles()
        tls.trustRoots = trust.rootsFile.map { .file($0) } ?? .default
        tls.additionalTrustRoots = trust.additionalFiles.map { .file($0) }
        let context = try NIOSSLContext(configuration: tls)
        tlsContexts.withLock { $0[trust] = context }
        return context
    }

    private static let tlsContexts = Mutex<[ChappieTLSTrust: NIOSSLContext]>([:])

    private static let logger = Logger(label: "chappie.websocket", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A NIO or TLS failure as an ``ChappieHTTPClientError`` naming the host only.
    private static func describe(_ error: any Error, host: String, during phase: String) -> ChappieHTTPClientError {
        switch error {
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return ChappieHTTPClientError(
                code: .certificateRejected,
                message: "the certificate of \(host) did not verify: it names another host. \(ChappieHTTPClientError.trustAdvice)")
        case let error where "\(error)".contains("CERTIFICATE_VERIFY_FAILED"):
            // BoringSSL's own text carries its build paths: only what happened is said.
            return ChappieHTTPClientError(
                code: .certificateRejected,
                message:
                    "the certificate of \(host) did not verify (unknown authority, expired, or not yet valid). \(ChappieHTTPClientError.trustAdvice)")
        case is NIOSSLError, is NIOSSLExtraError, is BoringSSLError:
            return ChappieHTTPClientError(code: .tlsFailed, message: "TLS with \(host) failed: \(error)")
        case let error as NIOConnectionError:
            return ChappieHTTPClientError(
                code: .connectFailed, message: "could not connect to \(host): \(error.connectionErrors.first.map { "\($0.error)" } ?? "no address")")
        case ChannelError.connectTimeout:
            return ChappieHTTPClientError(code: .connectFailed, message: "could not connect to \(host) in time")
        default:
            return ChappieHTTPClientError(code: .connectionLost, message: "the WebSocket to \(host) failed while \(phase): \(error)")
        }
    }
}

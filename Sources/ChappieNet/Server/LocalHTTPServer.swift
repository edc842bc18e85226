import Foundation
import NIOCore
import Synchronization
package import NIOHTTP1
import NIOPosix

/// A small HTTP/1.1 listener for chappie's own pages: the browser sign-in's callback on
/// 127.0.0.1 and the daemon's `/metrics`. Each request's head is handed to an async handler, and
/// the connection is closed after the answer. Nothing served here takes a body: a request that
/// declares one is answered 413 at once. A connection has 10 seconds from its accept to send its
/// request and lives at most 30, however slowly anything trickles in. At most 16 are open at a
/// time: past that, the oldest one that has idled a second without its request is closed for the
/// new one; when none has, the listener stops accepting until a slot is free, and new connections
/// wait in the kernel's queue in the order they came. So idle connections can neither hold the
/// process's descriptors nor lock out a scrape, and a client flooding the listener with requests
/// only takes its turns.
package final class LocalHTTPServer: Sendable {
    /// A request: its method, path, query and headers.
    package struct Request: Sendable {
        /// The method, such as `GET`.
        package var method: String
        /// The path, such as `/metrics`, percent-decoded.
        package var path: String
        /// The query's names and values, percent-decoded (the last of a repeated name wins).
        package var query: [String: String]
        /// The header fields, in order.
        package var headers: [(name: String, value: String)]
        /// The uid of the process that connected, when the listener identifies its peers and the
        /// kernel told (``listen(host:ports:identifyingPeers:handler:)``).
        package var peerUID: UInt32? = nil

        /// The first value of a header field, by case-insensitive name.
        package func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    /// An answer.
    package struct Response: Sendable {
        /// The HTTP status.
        package var status: Int
        /// The body's media type.
        package var contentType: String
        /// The body.
        package var body: [UInt8]
        /// Further header fields.
        package var headers: [(name: String, value: String)]

        /// An answer with a text body.
        package init(status: Int, contentType: String = "text/plain; charset=utf-8", text: String, headers: [(name: String, value: String)] = []) {
            self.status = status
            self.contentType = contentType
            self.body = Array(text.utf8)
            self.headers = headers
        }
    }

    /// No port could be listened on.
    package struct ListenFailure: Error, Sendable, CustomStringConvertible {
        /// Which address and ports, and why.
        package var message: String
        /// The message.
        package var description: String { message }
    }

    /// The most connections open at once.
    static let connectionLimit = 16
    /// How long a connection has to send its request.
    static let requestDeadline = TimeAmount.seconds(10)
    /// The longest a connection stays open.
    static let connectionLifetime = TimeAmount.seconds(30)

    /// The port it listens on.
    package let port: Int
    private let channel: any Channel

    /// Listens on `host` and the first of `ports` that is free (0 picks any free port).
    ///
    /// - Throws: ``ListenFailure`` naming the address and ports when none can be listened on.
    package static func listen(
        host: String, ports: [Int], identifyingPeers: Bool = false, handler: @escaping @Sendable (Request) async -> Response
    ) async throws(ListenFailure) -> LocalHTTPServer {
        var failure = ""
        let open = OpenConnections(limit: connectionLimit)
        for port in ports {
            let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .serverChannelOption(.backlog, value: 256)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try configure(channel, open: open, identifyingPeers: identifyingPeers, handler: handler) }
                }
            do {
                let channel = try await bootstrap.bind(host: host, port: port).get()
                open.listening(on: channel)
                return LocalHTTPServer(port: channel.localAddress?.port ?? port, channel: channel)
            } catch let error as IOError {
                failure =
                    switch error.errnoCode {
                    case EADDRINUSE: "another program listens there; choose another port"
                    case EACCES: "a port below 1024 needs privileges"
                    case EADDRNOTAVAIL: "this machine has no such address"
                    default: String(cString: strerror(error.errnoCode))
                    }
            } catch {
                failure = "\(error)"
            }
        }
        throw ListenFailure(message: "cannot listen on \(host) port \(ports.map(String.init).joined(separator: " or ")): \(failure)")
    }

    /// One connection's handlers: NIO's HTTP/1 server codec, then chappie's request handler.
    fileprivate static func configure(
        _ channel: any Channel, open: OpenConnections, identifyingPeers: Bool, handler: @escaping @Sendable (Request) async -> Response
    ) throws {
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
        try channel.pipeline.syncOperations.addHandler(RequestHandler(handler: handler, open: open, identifyingPeers: identifyingPeers))
    }

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    /// Stops listening. Connections already answered are closed by then; one being answered finishes.
    package func close() async {
        try? await channel.close()
    }
}

/// Hands each request's head to the handler and writes its answer, then closes the connection.
private final class RequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let handler: @Sendable (LocalHTTPServer.Request) async -> LocalHTTPServer.Response
    private let open: OpenConnections
    private var head: HTTPRequestHead?
    /// An answer is written or on its way: what else arrives is ignored.
    private var answering = false
    /// The closes scheduled at accept (request deadline, lifetime), cancelled when the connection ends.
    private var deadlines: [Scheduled<Void>] = []

    /// Whether each request is told which uid connected (``LoopbackPeer``).
    private let identifyingPeers: Bool

    init(handler: @escaping @Sendable (LocalHTTPServer.Request) async -> LocalHTTPServer.Response, open: OpenConnections, identifyingPeers: Bool) {
        self.handler = handler
        self.open = open
        self.identifyingPeers = identifyingPeers
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        open.admit(ObjectIdentifier(self), channel)?.close(promise: nil)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadlines = [
            context.eventLoop.scheduleTask(in: LocalHTTPServer.requestDeadline) {
                if !bound.value.answering { channel.close(promise: nil) }
            },
            context.eventLoop.scheduleTask(in: LocalHTTPServer.connectionLifetime) { channel.close(promise: nil) },
        ]
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        open.remove(ObjectIdentifier(self))
        deadlines.forEach { $0.cancel() }
        deadlines = []
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answering else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            let length = head.headers["Content-Length"].first.flatMap { Int($0) } ?? 0
            if length > 0 || head.headers.contains(name: "Transfer-Encoding") {
                answering = true
                open.answering(ObjectIdentifier(self))
                write(LocalHTTPServer.Response(status: 413, text: "nothing here takes a request body\n"), context: context)
                return
            }
            self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            answering = true
            open.answering(ObjectIdentifier(self))
            var identified = LocalHTTPServer.Request(head)
            if identifyingPeers { identified.peerUID = LoopbackPeer.uid(of: context.channel) }
            let request = identified
            let handler = self.handler
            let promise = context.eventLoop.makePromise(of: LocalHTTPServer.Response.self)
            promise.completeWithTask { await handler(request) }
            let bound = NIOLoopBound((context: context, handler: self), eventLoop: context.eventLoop)
            promise.futureResult.whenSuccess { response in
                bound.value.handler.write(response, context: bound.value.context)
            }
        }
    }

    private func write(_ response: LocalHTTPServer.Response, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var headers = NIOHTTP1.HTTPHeaders()
        headers.add(name: "Content-Type", value: response.contentType)
        headers.add(name: "Content-Length", value: String(response.body.count))
        headers.add(name: "Connection", value: "close")
        headers.add(name: "Cache-Control", value: "no-store")
        // Every answer read as the type it says, and no referrer sent on from it.
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        for field in response.headers { headers.add(name: field.name, value: field.value) }
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}

extension LocalHTTPServer.Request {
    /// The request a parsed head names: its path and query taken apart.
    package init(_ head: HTTPRequestHead) {
        let components = URLComponents(string: head.uri)
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        self.init(
            method: head.method.rawValue, path: components?.path ?? head.uri, query: query,
            headers: head.headers.map { (name: $0.name, value: $0.value) })
    }
}

import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A one-purpose HTTP listener on `127.0.0.1` for an OAuth redirect to come back to (the browser
/// sign-in's `http://localhost:PORT/auth/callback`): each `GET` is answered by `respond` with a
/// small HTML page and, when `respond` says so, handed to ``requests``. It never listens on
/// another address, reads no request body and closes each connection after answering.
package final class LoopbackCallbackServer: Sendable {
    /// A request the browser made: its path and its decoded query.
    package struct Request: Sendable {
        /// The path, such as `/auth/callback`.
        package var path: String
        /// The query's names and values, percent-decoded (the last of a repeated name wins).
        package var query: [String: String]
    }

    /// What to answer a request with, and whether to hand it on.
    package struct Answer: Sendable {
        /// The HTTP status.
        package var status: Int
        /// The page's text (HTML-escaped here).
        package var message: String
        /// Whether ``requests`` gets the request.
        package var deliver: Bool

        /// An answer.
        package init(status: Int, message: String, deliver: Bool) {
            self.status = status
            self.message = message
            self.deliver = deliver
        }
    }

    /// No port could be listened on.
    package struct ListenFailure: Error, Sendable {
        /// Which ports, and why.
        package var message: String
    }

    /// The port it listens on.
    package let port: Int
    /// The delivered requests, in order; it ends when the server is closed.
    package let requests: AsyncStream<Request>
    private let channel: any Channel
    private let continuation: AsyncStream<Request>.Continuation

    /// Listens on the first of `ports` that is free (0 picks any free port).
    ///
    /// - Throws: ``ListenFailure`` naming the ports when none is free.
    package static func listen(ports: [Int], respond: @escaping @Sendable (Request) -> Answer) async throws(ListenFailure) -> LoopbackCallbackServer {
        let (requests, continuation) = AsyncStream.makeStream(of: Request.self)
        var failure = ""
        for port in ports {
            let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(CallbackHandler(respond: respond, continuation: continuation))
                    }
                }
            do {
                let channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
                return LoopbackCallbackServer(
                    port: channel.localAddress?.port ?? port, requests: requests, channel: channel, continuation: continuation)
            } catch {
                failure = "\(error)"
            }
        }
        continuation.finish()
        throw ListenFailure(
            message: "cannot listen on 127.0.0.1 port \(ports.map(String.init).joined(separator: " or ")) (\(failure)); is another sign-in running?")
    }

    private init(port: Int, requests: AsyncStream<Request>, channel: any Channel, continuation: AsyncStream<Request>.Continuation) {
        self.port = port
        self.requests = requests
        self.channel = channel
        self.continuation = continuation
    }

    /// Stops listening and ends ``requests``.
    package func close() async {
        try? await channel.close()
        continuation.finish()
    }
}

/// Answers each request on one connection, then closes it.
private final class CallbackHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let respond: @Sendable (LoopbackCallbackServer.Request) -> LoopbackCallbackServer.Answer
    private let continuation: AsyncStream<LoopbackCallbackServer.Request>.Continuation
    private var head: HTTPRequestHead?

    init(
        respond: @escaping @Sendable (LoopbackCallbackServer.Request) -> LoopbackCallbackServer.Answer,
        continuation: AsyncStream<LoopbackCallbackServer.Request>.Continuation
    ) {
        self.respond = respond
        self.continuation = continuation
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            guard head.method == .GET, let components = URLComponents(string: head.uri) else {
                return write(LoopbackCallbackServer.Answer(status: 405, message: "Only GET is answered here.", deliver: false), context: context)
            }
            var query: [String: String] = [:]
            for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
            let request = LoopbackCallbackServer.Request(path: components.path, query: query)
            let answer = respond(request)
            write(answer, context: context)
            if answer.deliver { continuation.yield(request) }
        }
    }

    private func write(_ answer: LoopbackCallbackServer.Answer, context: ChannelHandlerContext) {
        let escaped = answer.message.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
        let page = "<!doctype html><meta charset=\"utf-8\"><title>chappie</title><p>\(escaped)</p>\n"
        var headers = NIOHTTP1.HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
        headers.add(name: "Content-Length", value: String(page.utf8.count))
        headers.add(name: "Connection", value: "close")
        headers.add(name: "Cache-Control", value: "no-store")
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: answer.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: page)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}

import ChappieCore
import ChappieDaemonClient
import ChappieSystem
import ChappieNet
import Foundation
package import NIOCore
import NIOExtras
import NIOPosix

/// The daemon's socket server, on SwiftNIO: one JSON request line in, one JSON reply line out, per
/// connection. NIO's event loops read and write; requests are answered on tasks, so an idle, slow
/// or half-closed client never holds a thread, never delays another client, and never delays the
/// refresh schedule.
///
/// Limits, shared with the dashboard's server (`OpenConnections`): at most
/// ``Limits/maximumConnections`` open at once, past which the oldest idle connection is closed (or
/// accepting pauses until a slot is free); a request line must arrive within the request deadline
/// and its reply be taken within the same time, or the connection is closed. Only the daemon's
/// own user and root are served (the peer's uid, from `SO_PEERCRED`; ``SocketPeer``, the clients' rule too).
package final class DaemonSocketServer: Sendable {
    /// How much the server allows each client.
    struct Limits: Sendable {
        /// Open connections at most. Default: 64.
        var maximumConnections = 64
        /// How long a client may take to send its request line, and to take its reply. Default: 10 s.
        var requestDeadline: Duration = .seconds(10)
    }

    /// The most a request line may be.
    package static let maximumRequestBytes = 64 * 1024

    private let channel: any Channel
    private let open: OpenConnections

    private init(channel: any Channel, open: OpenConnections) {
        self.channel = channel
        self.open = open
    }

    /// Serves the listening socket `listener` (bound and listening, made by `UnixSocket.listen`,
    /// which also owns the socket's path: NIO never unlinks it) with `handler`.
    static func start(
        listener: Int32, limits: Limits = Limits(), handler: @escaping @Sendable (DaemonRequest) async -> DaemonReply
    ) async throws -> DaemonSocketServer {
        let open = OpenConnections(limit: limits.maximumConnections)
        let deadline = TimeAmount.nanoseconds(Int64(limits.requestDeadline / .nanoseconds(1)))
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(RequestLengthLimit(maximum: maximumRequestBytes))
                    try sync.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                    try sync.addHandler(DaemonConnection(handler: handler, open: open, deadline: deadline))
                }
            }
        let channel = try await bootstrap.withBoundSocket(listener).get()
        open.listening(on: channel)
        return DaemonSocketServer(channel: channel, open: open)
    }

    /// Stops accepting, closes the listener and every connection still open: a stopped daemon
    /// answers nobody.
    func stop() async {
        try? await channel.close()
        open.closeAll()
    }

    /// A reply as its line on the wire.
    static func line(_ reply: DaemonReply, allocator: ByteBufferAllocator) -> ByteBuffer? {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        guard var bytes = try? encoder.encode(reply) else { return nil }
        bytes.append(0x0A)
        return allocator.buffer(bytes: bytes)
    }
}

/// Told to the connection when a request line runs past the limit without its newline.
struct RequestTooLong: Sendable {}

/// Passes bytes on until a line runs longer than `maximum` without a newline; then tells the
/// connection (``RequestTooLong``) and drops everything after, up to 4 MiB, so that the client can
/// finish sending and read its reply instead of being reset.
package final class RequestLengthLimit: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer

    private let maximum: Int
    private var sinceNewline = 0
    private var dropping: Int?

    package init(maximum: Int) {
        self.maximum = maximum
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        if let dropped = dropping {
            dropping = dropped + buffer.readableBytes
            if dropped + buffer.readableBytes > 4 << 20 { context.close(promise: nil) }
            return
        }
        let bytes = buffer.readableBytesView
        // The line carried over from earlier reads ends at this read's first newline, if any.
        var tooLong = sinceNewline + (bytes.firstIndex(of: 0x0A).map { $0 - bytes.startIndex } ?? bytes.count) > maximum
        if let last = bytes.lastIndex(of: 0x0A) {
            sinceNewline = bytes.endIndex - last - 1
            tooLong = tooLong || sinceNewline > maximum
        } else {
            sinceNewline += bytes.count
        }
        guard !tooLong else {
            dropping = 0
            context.fireUserInboundEventTriggered(RequestTooLong())
            return
        }
        context.fireChannelRead(data)
    }
}

/// One connection: its request line, the handler's answer, its deadlines, its slot.
final class DaemonConnection: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private enum Phase {
        /// Waiting for the request line.
        case reading
        /// The handler is working on it.
        case answering
        /// The reply is written or on its way.
        case replied
    }

    private let handler: @Sendable (DaemonRequest) async -> DaemonReply
    private let open: OpenConnections
    private let deadline: TimeAmount
    /// The longest an answer may take (a refresh waits up to 120 s for the issuer): past it the
    /// connection is closed, so that a stuck answer cannot keep its slot for ever.
    static let answeringLimit = TimeAmount.minutes(10)
    private var phase = Phase.reading
    private var closing: Scheduled<Void>?

    init(handler: @escaping @Sendable (DaemonRequest) async -> DaemonReply, open: OpenConnections, deadline: TimeAmount) {
        self.handler = handler
        self.open = open
        self.deadline = deadline
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        open.admit(ObjectIdentifier(self), channel)?.close(promise: nil)
        closeAfterDeadline(context)
        // Only the daemon's own user or root: the peer's credentials, as the kernel gives them (on the
        // event loop, so the answer is in before any request is read). No answer is a refusal.
        let refusal = DaemonReply.failure("this daemon serves its own user and root only", exitCode: ChappieExitCode.signInRequired)
        if let provider = channel as? any SocketOptionProvider {
            let bound = NIOLoopBound((connection: self, context: context), eventLoop: context.eventLoop)
            provider.unsafeGetSocketOption(level: .socket, name: NIOBSDSocket.Option(rawValue: SocketPeer.optionPeerCredentials)).whenComplete {
                (result: Result<SocketPeer.PeerCredentials, any Error>) in
                if let uid = try? result.get().uid, SocketPeer.isTrusted(uid: uid) { return }
                bound.value.connection.reply(refusal, context: bound.value.context)
            }
        } else {
            reply(refusal, context: context)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        open.remove(ObjectIdentifier(self))
        closing?.cancel()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .reading = phase else { return }
        answer(Data(unwrapInboundIn(data).readableBytesView), context: context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is RequestTooLong:
            if case .reading = phase { reply(Self.noRequestLine, context: context, thenDrain: true) }
        case ChannelEvent.inputClosed:
            // Half-closed with nothing sent; what was sent without a newline comes as left-over bytes.
            if case .reading = phase { reply(Self.noRequestLine, context: context) }
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Half-closed after a line without its newline: that line is the request.
        if let leftOver = error as? NIOExtrasErrors.LeftOverBytesError {
            if case .reading = phase { answer(Data(leftOver.leftOverBytes.readableBytesView), context: context) }
            return
        }
        context.close(promise: nil)
    }

    private static let noRequestLine = DaemonReply.failure(
        "no request line (one JSON object, at most 64 KiB, ending with a newline)", exitCode: ChappieExitCode.usage)

    private func answer(_ line: Data, context: ChannelHandlerContext) {
        guard let request = DaemonRequest.decode(line: line) else {
            return reply(.failure("the request is not a JSON object with a \"command\"", exitCode: ChappieExitCode.usage), context: context)
        }
        phase = .answering
        closing?.cancel()
        let channel = context.channel
        closing = context.eventLoop.scheduleTask(in: Self.answeringLimit) { channel.close(promise: nil) }
        open.answering(ObjectIdentifier(self))
        let handler = self.handler
        let promise = context.eventLoop.makePromise(of: DaemonReply.self)
        promise.completeWithTask { await handler(request) }
        let bound = NIOLoopBound((connection: self, context: context), eventLoop: context.eventLoop)
        promise.futureResult.whenSuccess { reply in bound.value.connection.reply(reply, context: bound.value.context) }
    }

    /// Writes the reply and closes; the client has the request deadline to take it. With
    /// `thenDrain`, only the output is closed, and the connection ends when the client is done.
    private func reply(_ reply: DaemonReply, context: ChannelHandlerContext, thenDrain: Bool = false) {
        guard phase != .replied, context.channel.isActive else { return }
        phase = .replied
        // A reply that does not encode (a number JSON cannot carry) is a failure, never a silence.
        let line =
            DaemonSocketServer.line(reply, allocator: context.channel.allocator)
            ?? DaemonSocketServer.line(
                .failure("the daemon could not encode its answer; see its log", exitCode: ChappieExitCode.failure),
                allocator: context.channel.allocator)!
        closing?.cancel()
        closeAfterDeadline(context)
        let channel = context.channel
        context.writeAndFlush(NIOAny(line)).whenComplete { _ in
            // A client gone before its reply is an error here, never a SIGPIPE (NIO ignores SIGPIPE).
            channel.close(mode: thenDrain ? .output : .all, promise: nil)
        }
    }

    /// Closes the connection unless it is being answered when the deadline comes.
    private func closeAfterDeadline(_ context: ChannelHandlerContext) {
        let channel = context.channel
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        closing = context.eventLoop.scheduleTask(in: deadline) {
            if bound.value.phase != .answering { channel.close(promise: nil) }
        }
    }
}

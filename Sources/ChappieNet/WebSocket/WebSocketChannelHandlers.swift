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
            promise.fail(ChappieHTTPClientError(code: .connectionLost, message: "the connection closed before the upgrade was answered"))
            return
        }
        promise.succeed(WebSocketUpgradeRefused(status: Int(head.status.code), headers: ChappieHTTPHeaders(head.headers), body: body))
    }
}

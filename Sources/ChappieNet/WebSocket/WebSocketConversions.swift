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

extension ChappieHTTPHeaders {
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

package import NIOCore
import Synchronization

/// A server's open connections, oldest first, and whether each still waits for its request: the
/// limit and the eviction the dashboard's HTTP server and the daemon's socket share.
package final class OpenConnections: Sendable {
    /// The most connections open at once.
    private let limit: Int

    private struct Entry {
        let id: ObjectIdentifier
        let channel: any Channel
        var waiting: Bool
        let accepted = ContinuousClock.now

        /// Still without its request a second after its accept: idle, or trickling bytes in.
        var idle: Bool { waiting && ContinuousClock.now - accepted > .seconds(1) }
    }

    private let entries = Mutex<[Entry]>([])

    /// Keeps at most `limit` connections open.
    package init(limit: Int) {
        self.limit = limit
    }
    /// The listening channel, whose accepting pauses while every slot is being answered.
    private let server = Mutex<(any Channel)?>(nil)

    /// The listener, once bound.
    package func listening(on channel: any Channel) {
        server.withLock { $0 = channel }
    }

    /// Takes a new connection; returns the connection to close for it, if the limit is reached:
    /// the oldest that has been idle (no request a second after its accept), so that idle
    /// connections cannot lock others out. Otherwise none is closed: the listener stops accepting
    /// until a slot is free, and new connections wait in the kernel's queue in the order they
    /// came. A client that floods the listener then only takes its turns, and another client's
    /// scrape gets its own.
    package func admit(_ id: ObjectIdentifier, _ channel: any Channel) -> (any Channel)? {
        let (evicted, full) = entries.withLock { entries in
            var evicted: (any Channel)?
            if entries.count >= limit, let oldest = entries.firstIndex(where: \.idle) {
                evicted = entries.remove(at: oldest).channel
            }
            entries.append(Entry(id: id, channel: channel, waiting: true))
            return (evicted, entries.count >= limit)
        }
        if full { accepting(false) }
        return evicted
    }

    private func accepting(_ on: Bool) {
        guard let server = server.withLock({ $0 }) else { return }
        server.setOption(ChannelOptions.autoRead, value: on).whenFailure { _ in }
        // Paused with idle connections among the full slots: they are closed a second later (no
        // newcomer can arrive to push them out meanwhile), and accepting resumes.
        if !on { server.eventLoop.scheduleTask(in: .milliseconds(1100)) { self.closeIdle() } }
    }

    private func closeIdle() {
        let idle = entries.withLock { entries in
            let idle = entries.filter(\.idle)
            entries.removeAll(where: \.idle)
            return idle
        }
        idle.forEach { $0.channel.close(promise: nil) }
        if !idle.isEmpty { accepting(true) }
    }

    /// The connection's request has arrived: it is no longer the one to close first.
    package func answering(_ id: ObjectIdentifier) {
        entries.withLock { entries in
            if let index = entries.firstIndex(where: { $0.id == id }) { entries[index].waiting = false }
        }
    }

    /// Closes every open connection (the server stops): answers still being worked on find their
    /// connection gone, and write nowhere.
    package func closeAll() {
        let all = entries.withLock { entries in
            defer { entries.removeAll() }
            return entries
        }
        all.forEach { $0.channel.close(promise: nil) }
    }

    /// The connection closed: a slot is free, so the listener accepts again.
    package func remove(_ id: ObjectIdentifier) {
        let free = entries.withLock { entries in
            entries.removeAll { $0.id == id }
            return entries.count < limit
        }
        if free { accepting(true) }
    }
}

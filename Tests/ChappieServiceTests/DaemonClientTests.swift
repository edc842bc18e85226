import ChappieDaemonClient
import ChappieSystem
import ChappieTestSupport
import Foundation
import Testing

@Suite("The daemon's client (NIO-free): async, off Swift's cooperative pool, cancellable")
struct DaemonClientTests {
    /// A Unix socket that accepts connections and never answers them.
    final class SilentListener: Sendable {
        let path: String
        let descriptor: Int32

        init() throws {
            path = try TestTokens.temporaryDirectory("chappie-silent").appendingPathComponent("s.sock").path
            descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = try #require(DaemonSocketExchange.address(path))
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            #expect(bound == 0)
            #expect(listen(descriptor, 8) == 0)
        }

        deinit {
            close(descriptor)
            try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        }
    }

    @Test("No socket file: no daemon, at once")
    func noDaemon() async throws {
        let missing = try TestTokens.temporaryDirectory("chappie-nodaemon").appendingPathComponent("chappie.sock")
        #expect(try await DaemonClient.send(DaemonRequest(command: "status"), to: missing) == nil)
        guard case .noDaemon = try await DaemonClient.ask(DaemonRequest(command: "status"), to: missing) else {
            Issue.record("a missing socket is no daemon")
            return
        }
    }

    @Test("A daemon that never answers is left when the task is cancelled, without waiting for the timeout", .timeLimit(.minutes(10)))
    func cancelledWhileWaiting() async throws {
        let listener = try SilentListener()
        let asking = Task {
            try await DaemonClient.send(DaemonRequest(command: "status"), to: URL(fileURLWithPath: listener.path), timeout: .seconds(3600))
        }
        // Wait until the request is queued at the listener (connected), then cancel.
        var pending = pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0)
        while poll(&pending, 1, 50) == 0 { await Task.yield() }
        asking.cancel()
        #expect(try await asking.value == nil)
        withExtendedLifetime(listener) {}
    }

    @Test("A socket that is not a daemon's answers nothing usable: no reply, no crash")
    func notADaemon() async throws {
        let listener = try SilentListener()
        let answering = Thread {
            let client = accept(listener.descriptor, nil, nil)
            let junk = Array("this is not JSON\n".utf8)
            _ = send(client, junk, junk.count, Int32(MSG_NOSIGNAL))
            close(client)
        }
        answering.start()
        let outcome = try await DaemonClient.ask(DaemonRequest(command: "status"), to: URL(fileURLWithPath: listener.path), timeout: .seconds(3600))
        guard case .noAnswer = outcome else {
            Issue.record("a socket that answers junk gave \(outcome), not .noAnswer")
            return
        }
        withExtendedLifetime(listener) {}
    }
}

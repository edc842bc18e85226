@testable import ChappieService
import Foundation
import Synchronization
import Testing

@Suite("The daemon's state on an injected time: backoff growth and expiry, limit-event hysteresis, recent attempts")
struct DaemonStateTests {
    /// A wall clock a test sets.
    final class Now: Sendable {
        private let date = Mutex(Date(timeIntervalSince1970: 1_790_000_000))
        var value: Date { date.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { date.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    struct Failure: Error {}

    private func state(_ now: Now) -> DaemonState {
        DaemonState(
            initialBackoff: .seconds(30), maximumBackoff: .seconds(300), startedAt: now.value, counters: .discarding, now: { now.value })
    }

    @Test("Failures back off 30 s, doubling to the maximum (±10 %); the wait ends when its time passes; a success clears it")
    func backoff() async {
        let now = Now()
        let state = state(now)
        var expected = 30.0
        for _ in 0..<6 {
            let until = await state.failed(7, refresh: true, error: Failure())
            let delay = until.timeIntervalSince(now.value)
            #expect(delay >= expected * 0.9 && delay <= expected * 1.1, "\(delay) for \(expected)")
            expected = min(300, expected * 2)
        }
        #expect(await state.backoffUntil(7) != nil)
        #expect(await state.backingOff().keys.sorted() == [7])
        now.advance(331)
        #expect(await state.backoffUntil(7) == nil)
        #expect(await state.backingOff().isEmpty)
        // The count is kept until a success: the next failure waits the maximum again.
        let next = await state.failed(7, refresh: false, error: Failure())
        #expect(next.timeIntervalSince(now.value) >= 270)
        await state.polled(7)
        #expect(await state.backoffUntil(7) == nil)
        let fresh = await state.failed(7, refresh: true, error: Failure())
        #expect(fresh.timeIntervalSince(now.value) <= 33)
        #expect(await state.refreshFailures == 7)
        #expect(await state.pollFailures == 1)
    }

    @Test("A limit event is acted on once; after a failed switch, again only a minute later; a new event at once")
    func limitEventHysteresis() async {
        let now = Now()
        let state = state(now)
        #expect(await state.shouldActOnLimitEvent("work:1800"))
        #expect(await !state.shouldActOnLimitEvent("work:1800"))
        await state.limitSwitchFailed()
        now.advance(59)
        #expect(await !state.shouldActOnLimitEvent("work:1800"))
        now.advance(1)
        #expect(await state.shouldActOnLimitEvent("work:1800"))
        #expect(await !state.shouldActOnLimitEvent("work:1800"))
        #expect(await state.shouldActOnLimitEvent("work:19800"))
        // No other account had room: asked again after the next poll round.
        await state.limitSwitchFailed(retryingAfter: .seconds(10))
        now.advance(9)
        #expect(await !state.shouldActOnLimitEvent("work:19800"))
        now.advance(1)
        #expect(await state.shouldActOnLimitEvent("work:19800"))
    }

    @Test("An attempt counts as recent for a minute")
    func recentAttempts() async {
        let now = Now()
        let state = state(now)
        #expect(await state.recentAttempts()[3] == nil)
        await state.attempted(3)
        now.advance(59)
        #expect(await state.recentAttempts()[3] != nil)
        now.advance(1)
        #expect(await state.recentAttempts()[3] == nil)
    }
}

@Suite("The daemon warns when its refresh margin would race a running Codex")
struct CodexRaceWarningTests {
    @Test("Margins inside Codex's 5-minute window are warned of; the default and longer ones are not")
    func warning() {
        let socket = URL(fileURLWithPath: "/tmp/chappie.sock")
        #expect(DaemonConfiguration(socket: socket).codexRaceWarning == nil)
        #expect(DaemonConfiguration(socket: socket, refreshMargin: .seconds(301)).codexRaceWarning == nil)
        for margin in [2, 60, 300] {
            let warning = DaemonConfiguration(socket: socket, refreshMargin: .seconds(margin)).codexRaceWarning
            #expect(warning?.contains("\(margin) s") == true)
            #expect(warning?.contains("--refresh-margin above 5m") == true)
        }
    }
}

import ChappieStore
import ChappieTestSupport
import Foundation
import Testing

@Suite("Lock waits on an injected clock: a wait ends at its timeout, and a lock given back is taken at the next look", .timeLimit(.minutes(10)))
struct FileLockClockTests {
    @Test("A held lock is waited for until the timeout on the clock, then it is a temporary failure")
    func waitEndsAtTimeout() async throws {
        let directory = try TestTokens.temporaryDirectory("chappie-lockclock")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("account-1.lock")
        let held = try await FileLock.acquire(url)
        let clock = ManualClock()
        let waiter = Task { try await FileLock.acquire(url, timeout: .seconds(10), clock: clock) }
        // Nine seconds on: the waiter is still looking (asleep on the clock again), not failed.
        for _ in 0..<9 {
            await clock.waitForSleepers()
            clock.advance(by: .seconds(1))
        }
        await clock.waitForSleepers()
        #expect(clock.now.offset == .seconds(9))
        // The timeout is reached exactly: no later look.
        clock.advance(by: .seconds(1))
        await #expect {
            _ = try await waiter.value
        } throws: { error in
            (error as? StoreError)?.code == .unavailable
        }
        withExtendedLifetime(held) {}
    }

    @Test("A lock given back while a process waits is taken when the waiter next looks")
    func releasedLockIsTaken() async throws {
        let directory = try TestTokens.temporaryDirectory("chappie-lockclock")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("account-1.lock")
        var held: FileLock? = try await FileLock.acquire(url)
        let clock = ManualClock()
        let waiter = Task { try await FileLock.acquire(url, timeout: .seconds(3600), clock: clock) }
        await clock.waitForSleepers()
        withExtendedLifetime(held) {}
        held = nil
        clock.advance(by: .seconds(1))
        let taken = try await waiter.value
        withExtendedLifetime(taken) {}
        #expect(clock.now.offset == .seconds(1))
    }
}

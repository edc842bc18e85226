import ChappieStore
import ChappieTestSupport
import Foundation
import Testing

@Suite("An account's refresh lock")
struct RefreshLockTests {
    @Test("Waiting too long for an account's refresh lock is a temporary failure that says a refresh is in flight")
    func busyRefreshLock() async throws {
        let directory = try TestTokens.temporaryDirectory("chappie-lock")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("account-1.lock")
        let held = try await FileLock.acquire(url)
        await #expect {
            _ = try await FileLock.acquireRefreshLock(url, timeout: .milliseconds(100))
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .unavailable && error.message.contains("in flight")
        }
        withExtendedLifetime(held) {}
    }
}

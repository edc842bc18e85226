import ChappieCore
@testable import ChappieService
import Foundation
import Testing

@Suite("The daemon's refresh plan: exp minus margin and jitter, backoff, a 5-second pause per account, the next wake")
struct RefreshPlanTests {
    private let plan = RefreshPlan(margin: .seconds(600), rescanInterval: .seconds(300))
    private let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func account(_ id: Int64, expiresIn seconds: TimeInterval?, lastRefreshAgo: TimeInterval? = nil, status: AccountStatus = .ok) throws
        -> Account
    {
        Account(
            id: id, uuid: UUID(), name: try AccountName("a\(id)"),
            info: ChappieAccountInfo(email: nil, userID: nil, accountID: nil, plan: nil, isFedRAMPAccount: false),
            status: status, accessTokenExpiresAt: seconds.map { now.addingTimeInterval($0) },
            lastRefreshAt: lastRefreshAgo.map { now.addingTimeInterval(-$0) }, lastError: nil, codexHome: nil, reservePercent: nil,
            createdAt: now, updatedAt: now, isActive: false, maxLeases: 1)
    }

    @Test("Due at exp minus the margin and the account's own jitter (0–30 s), not a second before")
    func marginAndJitter() throws {
        let account = try account(40, expiresIn: 700)
        let jitter = Double(plan.jitter(for: account))
        #expect(jitter == 9)
        #expect(plan.refreshTime(for: account) == now.addingTimeInterval(700 - 600 - jitter))
        let early = plan.due([account], backoffUntil: [:], lastAttempts: [:], now: now.addingTimeInterval(90))
        #expect(early.due.isEmpty)
        #expect(early.next == now.addingTimeInterval(91))
        #expect(plan.due([account], backoffUntil: [:], lastAttempts: [:], now: now.addingTimeInterval(91)).due.map(\.id) == [40])
    }

    @Test("Without an exp, due 8 days after the last refresh; an account that needs a sign-in is never due")
    func noExpiry() throws {
        let fresh = try account(31, expiresIn: nil, lastRefreshAgo: 86400)
        let stale = try account(62, expiresIn: nil, lastRefreshAgo: 8 * 86400)
        let signedOut = try account(93, expiresIn: -3600, status: .reauthRequired)
        let result = plan.due([fresh, stale, signedOut], backoffUntil: [:], lastAttempts: [:], now: now)
        #expect(result.due.map(\.id) == [62])
    }

    @Test("A backoff and a look within the last 5 s hold a due account back; the next wake is the earliest, at most the rescan interval")
    func backoffPauseAndWake() throws {
        let due = try account(1, expiresIn: 0)
        let backingOff = try account(2, expiresIn: 0)
        let justLooked = try account(3, expiresIn: 0)
        let later = try account(4, expiresIn: 3600)
        let result = plan.due(
            [due, backingOff, justLooked, later], backoffUntil: [2: now.addingTimeInterval(120)], lastAttempts: [3: now.addingTimeInterval(-2)],
            now: now)
        #expect(result.due.map(\.id) == [1])
        #expect(result.next == now.addingTimeInterval(3))
        let quiet = plan.due([later], backoffUntil: [:], lastAttempts: [:], now: now)
        #expect(quiet.due.isEmpty)
        #expect(quiet.next == now.addingTimeInterval(300), "the rescan interval caps the sleep")
    }
}

import Chappie
import ChappieCore
@testable import ChappieService
import ChappieStore
import ChappieTestSupport
import Foundation
import Testing

@Suite("Lease waits on an injected clock: no slot until --wait has passed is exit 75; a slot freed meanwhile is taken", .timeLimit(.minutes(10)))
struct LeaseWaitTests {
    /// A store with one account, `busy`, whose one slot another holder has.
    private func busyStore() async throws -> (store: any AccountStore, account: Account, held: Lease, home: URL) {
        let home = try TestTokens.temporaryDirectory("chappie-leasewait")
        let store = try await StoreOpener.open(StoreOptions(home: home.path, environment: [:])).local!
        let accountID = UUID().uuidString.lowercased()
        let account = try await store.save(
            info: ChappieAccountInfo(email: "busy@example.com", userID: "user-busy", accountID: accountID, plan: .plus),
            credentials: Credentials(
                idToken: TestTokens.idToken(email: "busy@example.com", accountID: accountID, userID: "user-busy"), accessToken: "a",
                refreshToken: "r"),
            accessTokenExpiresAt: Date(timeIntervalSinceNow: 3600), refreshedAt: Date(), name: try AccountName("busy"), event: .imported
        ).account
        let held = try #require(
            try await store.acquireLease(on: [.init(accountID: account.id, wholeAccount: false)], holder: "other job", ttl: .seconds(3600)))
        return (store, account, held, home)
    }

    private func service(_ store: any AccountStore, _ clock: ManualClock) throws -> LeaseService {
        LeaseService(store: store, usage: UsageService(store: store, endpoints: ChappieEndpoints()), clock: clock)
    }

    @Test("With every slot taken, the wait ends when --wait has passed on the clock: exit 75, and it said it was waiting")
    func waitEnds() async throws {
        let (store, account, _, home) = try await busyStore()
        defer { try? FileManager.default.removeItem(at: home) }
        let clock = ManualClock()
        let told = Log()
        let leases = try service(store, clock)
        let asking = Task { try await leases.acquire(LeaseRequest(account: account.name, wait: .seconds(10)), waiting: { told.append($0) }) }
        // Tries every 2 s: four more looks, then the fifth comes at the deadline.
        for _ in 0..<5 {
            await clock.waitForSleepers()
            clock.advance(by: .seconds(2))
        }
        await #expect {
            _ = try await asking.value
        } throws: { error in
            guard let error = error as? ServiceError else { return false }
            return error.code == .unavailable && error.message.contains("free lease slot for 10 s")
        }
        #expect(told.entries.count == 1)
        #expect(told.entries.first?.contains("every lease slot is taken") == true)
    }

    @Test("A slot given back while a job waits is taken at the next look")
    func freedSlotIsTaken() async throws {
        let (store, account, held, home) = try await busyStore()
        defer { try? FileManager.default.removeItem(at: home) }
        let clock = ManualClock()
        let leases = try service(store, clock)
        let asking = Task { try await leases.acquire(LeaseRequest(account: account.name, wait: .seconds(600), holder: "waiting job")) }
        await clock.waitForSleepers()
        try await store.releaseLease(held.id)
        clock.advance(by: .seconds(2))
        let granted = try await asking.value
        #expect(granted.lease.holder == "waiting job")
        #expect(granted.account.id == account.id)
        #expect(clock.now.offset == .seconds(2))
    }
}

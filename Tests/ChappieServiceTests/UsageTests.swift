import Chappie
import ChappieCore
import ChappieEmulator
import ChappieNet
import ChappieService
import ChappieStore
import ChappieTestSupport
import Foundation
import SwiftCSV
import Testing

@Suite("Usage: polling against the emulator, reports, CSV, time zones, --best")
struct UsageTests {
    /// A store in a temporary home, with `count` accounts signed in at the emulator.
    private func signedIn(_ emulator: RunningEmulator, count: Int) async throws -> (UsageService, [Account], URL) {
        let home = try TestTokens.temporaryDirectory("chappie-usage")
        let store = try await StoreOpener.open(StoreOptions(home: home.path, environment: [:])).local!
        let endpoints = try ChappieEndpoints(issuer: emulator.baseURL.absoluteString, backend: emulator.backendURL.absoluteString)
        let service = UsageService(store: store, endpoints: endpoints, http: emulator.client)
        var accounts: [Account] = []
        for index in 0..<count {
            let tokens = try await emulator.signIn(email: "u\(index)@example.com", plan: ["plus", "pro", "team", "free"][index % 4])
            let claims = try TokenClaims(jwt: tokens.idToken)
            accounts.append(
                try await store.save(
                    info: claims.account,
                    credentials: Credentials(idToken: tokens.idToken, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken),
                    accessTokenExpiresAt: try TokenClaims(jwt: tokens.accessToken).expiresAt, refreshedAt: Date(), name: nil, event: .signedIn
                ).account)
        }
        return (service, accounts, home)
    }

    private func setUsage(_ emulator: RunningEmulator, _ account: Account, fiveHour: Double?, weekly: Double?) async throws {
        var body: [String: Double] = [:]
        body["five_hour_used_percent"] = fiveHour
        body["weekly_used_percent"] = weekly
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        _ = try await emulator.client.execute(emulator.request("/_emulator/accounts/\(account.info.accountID!)/usage", method: .post, json: json))
    }

    @Test("A poll sends the account headers, stores a sample, and writes the audit log")
    func pollStores() async throws {
        try await withEmulator { emulator in
            let (service, accounts, home) = try await signedIn(emulator, count: 1)
            defer { try? FileManager.default.removeItem(at: home) }
            try await setUsage(emulator, accounts[0], fiveHour: 37, weekly: 61)
            let snapshots = try await service.poll(accounts[0])
            #expect(snapshots.first?.shortWindow?.usedPercent == 37)
            let stored = try #require(try await service.store.latestUsage()[accounts[0].id])
            #expect(stored.source == .poll)
            #expect(stored.snapshot.longWindow?.usedPercent == 61)
            let event = try #require(try await service.store.events().first { $0.kind == "usage_polled" })
            #expect(event.detail.contains("GET http://127.0.0.1:\(emulator.port)/backend-api/wham/usage"))
            #expect(event.detail.contains("HTTP 200"))
            #expect(!event.detail.contains("eyJ"))
        }
    }

    @Test(
        "Real-shaped replies with nulls, a missing window and an unknown plan are stored as they are",
        arguments: [
            "wham-usage-nulls.json", "wham-usage-weekly-only.json", "wham-usage-unknown-plan.json", "wham-usage-limit-reached.json",
        ])
    func pollOddReplies(_ fixture: String) async throws {
        try await withEmulator { emulator in
            let (service, accounts, home) = try await signedIn(emulator, count: 1)
            defer { try? FileManager.default.removeItem(at: home) }
            let body = String(decoding: try Fixtures.data(fixture), as: UTF8.self)
            let fault = try JSONSerialization.data(withJSONObject: ["kind": "status", "status": 200, "path": "/backend-api/wham/usage", "body": body])
            _ = try await emulator.client.execute(emulator.request("/_emulator/faults", method: .post, json: String(decoding: fault, as: UTF8.self)))
            let snapshots = try await service.poll(accounts[0])
            let expected = try ChappieUsageLimitSnapshot.decodeUsage(try Fixtures.data(fixture))
            #expect(snapshots == expected)
            let stored = try await service.store.usageSamples(for: accounts[0], since: nil, until: nil)
            #expect(stored.count == expected.count)
            #expect(stored.first?.snapshot.plan == expected.first?.plan)
            #expect(stored.first?.snapshot.longWindow?.usedPercent == expected.first?.longWindow?.usedPercent)
        }
    }

    @Test("A 401 on the first try goes through the refresh path once, then succeeds")
    func pollAfter401() async throws {
        try await withEmulator { emulator in
            let (service, accounts, home) = try await signedIn(emulator, count: 1)
            defer { try? FileManager.default.removeItem(at: home) }
            _ = try await emulator.client.execute(
                emulator.request(
                    "/_emulator/faults", method: .post, json: #"{"kind":"status","status":401,"path":"/backend-api/wham/usage","count":1}"#))
            let snapshots = try await service.poll(accounts[0])
            #expect(snapshots.first?.limitID == "codex")
            let stats = try await emulator.json(emulator.request("/_emulator/stats")).json
            #expect(stats.int("refresh", "redemptions") == 1)
            #expect(stats.int("requests", "/backend-api/wham/usage") == 2)
        }
    }

    @Test("--best: the lowest binding window wins, the reserve counts as full, ties go to the earlier reset")
    func best() async throws {
        try await withEmulator { emulator in
            let (service, accounts, home) = try await signedIn(emulator, count: 3)
            defer { try? FileManager.default.removeItem(at: home) }
            // a: 5h room but weekly nearly exhausted; b: 50/20; c: 10/45.
            try await setUsage(emulator, accounts[0], fiveHour: 5, weekly: 95)
            try await setUsage(emulator, accounts[1], fiveHour: 50, weekly: 20)
            try await setUsage(emulator, accounts[2], fiveHour: 10, weekly: 45)
            var choice = try await service.best(maxAge: .zero)
            #expect(choice.account.name == accounts[2].name)
            #expect(choice.reason.contains("weekly 45 % (binding)"))
            // c's reserve makes it full at 40 %: b is next.
            _ = try await service.store.setReserve(40, for: accounts[2].name)
            choice = try await service.best(maxAge: .zero)
            #expect(choice.account.name == accounts[1].name)
            // Everyone full: a clear error naming the first reset.
            try await setUsage(emulator, accounts[1], fiveHour: 100, weekly: 20)
            try await setUsage(emulator, accounts[0], fiveHour: 5, weekly: 100)
            await #expect { _ = try await service.best(maxAge: .zero) } throws: { error in
                (error as? ServiceError)?.message.contains("every account is at its limit") == true
            }
        }
    }

    @Test("--best: on a tie of the binding window, the earlier reset wins")
    func bestTie() async throws {
        try await withEmulator { emulator in
            let (service, first, home) = try await signedIn(emulator, count: 1)
            defer { try? FileManager.default.removeItem(at: home) }
            // Windows start when an account first appears, so the second one resets a little later.
            try await Task.sleep(for: .milliseconds(1100))
            let tokens = try await emulator.signIn(email: "later@example.com", plan: "plus")
            let second = try await service.store.save(
                info: try TokenClaims(jwt: tokens.idToken).account,
                credentials: Credentials(idToken: tokens.idToken, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken),
                accessTokenExpiresAt: nil, refreshedAt: Date(), name: nil, event: .signedIn
            ).account
            try await setUsage(emulator, second, fiveHour: 30, weekly: 10)
            try await setUsage(emulator, first[0], fiveHour: 30, weekly: 10)
            #expect(try await service.best(maxAge: .zero).account.name == first[0].name)
        }
    }

    @Test("Pruning deletes old samples and keeps the audit log")
    func prune() async throws {
        let home = try TestTokens.temporaryDirectory("chappie-prune")
        defer { try? FileManager.default.removeItem(at: home) }
        let store = try await StoreOpener.open(StoreOptions(home: home.path, environment: [:])).local!
        let account = try await store.save(
            info: ChappieAccountInfo(email: "p@example.com", userID: "u", accountID: "a", plan: .plus),
            credentials: Credentials(idToken: "i", accessToken: "a", refreshToken: "r"), accessTokenExpiresAt: nil, refreshedAt: nil,
            name: nil, event: .imported
        ).account
        let snapshot = ChappieUsageLimitSnapshot(
            limitID: "codex", plan: .plus, shortWindow: ChappieUsageWindow(usedPercent: 1, windowMinutes: 300, resetsAt: nil), longWindow: nil)
        for days in [100.0, 50, 1] {
            try await store.recordUsage([snapshot], for: account, source: .poll, at: Date().addingTimeInterval(-days * 86400))
        }
        #expect(try await store.pruneUsage(olderThan: Date().addingTimeInterval(-60 * 86400)) == 1)
        #expect(try await store.usageSamples(for: account, since: nil, until: nil).count == 2)
        #expect(try await store.events().first?.kind == "usage_pruned")
        #expect(try await store.events().contains { $0.kind == "imported" })
    }
}

import ChappieCore
import ChappieTestSupport
import Foundation
import Testing

@testable import ChappieService

@Suite("Alert rules: thresholds once per cycle, resets, what is remembered, which webhooks are allowed")
struct AlertRulesTests {
    private let uuid = UUID()

    /// One account, the same (by its UUID) at every read.
    private var account: Account {
        get throws {
            Account(
                id: 1, uuid: uuid, name: try AccountName("work"),
                info: ChappieAccountInfo(email: "w@example.com", userID: "u", accountID: "a", plan: .plus), status: .ok,
                accessTokenExpiresAt: nil, lastRefreshAt: nil, lastError: nil, codexHome: nil, reservePercent: nil, createdAt: Date(),
                updatedAt: Date(), isActive: true)
        }
    }

    private func reading(_ used: Double, weekly: Double = 10, resetsAt: Date) -> ChappieUsageLimitSnapshot {
        ChappieUsageLimitSnapshot(
            limitID: "codex", plan: nil, shortWindow: ChappieUsageWindow(usedPercent: used, windowMinutes: 300, resetsAt: resetsAt),
            longWindow: ChappieUsageWindow(usedPercent: weekly, windowMinutes: 10080, resetsAt: resetsAt.addingTimeInterval(86_400)))
    }

    @Test("A jump over several thresholds fires the highest once; the same cycle never again, even after a restart; the next cycle does")
    func thresholds() async throws {
        let directory = try TestTokens.temporaryDirectory("chappie-alerts")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cycle = Date(timeIntervalSince1970: 1_800_000_000)
        let monitor = AlertMonitor(directory: directory, thresholds: [80, 95, 100], timeZone: try #require(TimeZone(identifier: "Europe/Paris")))
        #expect(await monitor.observe(try account, reading(50, resetsAt: cycle)).events.isEmpty)
        // 2027-01-15 08:00 UTC is 09:00 in Paris; two hours and a quarter ahead.
        let jump = await monitor.observe(try account, reading(97, resetsAt: cycle), now: cycle.addingTimeInterval(-8100))
        #expect(jump.events.map { $0.threshold } == [95])
        #expect(jump.events.first?.message == "work has used 97 % of its 5-hour window (past 95 %); it resets at 09:00 (in 2 h 15 min)")
        #expect(jump.events.first?.resetsAt == cycle, "the body keeps the exact time")
        #expect(await monitor.observe(try account, reading(98, resetsAt: cycle)).events.isEmpty)

        let restarted = AlertMonitor(directory: directory, thresholds: [80, 95, 100])
        #expect(
            await restarted.observe(try account, reading(96, resetsAt: cycle.addingTimeInterval(30))).events.isEmpty,
            "a reset time that jitters is the same cycle")
        let full = await restarted.observe(try account, reading(100, resetsAt: cycle))
        #expect(full.events.map { $0.threshold } == [100])
        #expect(full.reachedLimit == [.fiveHour] && full.atLimit == [.fiveHour])
        #expect(await restarted.observe(try account, reading(100, resetsAt: cycle)).reachedLimit.isEmpty, "reached once per cycle")
        #expect(await !restarted.redeemedThisCycle(try account, window: .fiveHour))
        await restarted.noteRedeemed(try account, window: .fiveHour)
        #expect(await restarted.redeemedThisCycle(try account, window: .fiveHour))

        let next = cycle.addingTimeInterval(18_000)
        let reset = await restarted.observe(try account, reading(3, resetsAt: next))
        #expect(reset.events.map { $0.event } == [AlertEvent.Kind.reset])
        #expect(await !restarted.redeemedThisCycle(try account, window: .fiveHour), "a new cycle may redeem again")
        #expect(reset.events.first?.usedPercent == 3)
        #expect(await restarted.observe(try account, reading(81, resetsAt: next)).events.map { $0.threshold } == [80])
    }

    @Test("Use falling by 5 points within a cycle (a redeemed credit) starts it afresh")
    func redeemed() async throws {
        let directory = try TestTokens.temporaryDirectory("chappie-alerts")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cycle = Date(timeIntervalSince1970: 1_800_000_000)
        let monitor = AlertMonitor(directory: directory, thresholds: [80])
        _ = await monitor.observe(try account, reading(100, resetsAt: cycle))
        #expect(await monitor.observe(try account, reading(0, resetsAt: cycle)).events.map { $0.event } == [AlertEvent.Kind.reset])
        #expect(await monitor.observe(try account, reading(90, resetsAt: cycle)).events.map { $0.event } == [AlertEvent.Kind.threshold])
    }

    @Test("Sign-in is told once until the account works again; a damaged state file starts afresh")
    func signIn() async throws {
        let directory = try TestTokens.temporaryDirectory("chappie-alerts")
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("{not json".utf8).write(to: directory.appendingPathComponent("alerts-state.json"))
        let monitor = AlertMonitor(directory: directory, thresholds: [80])
        #expect(await monitor.shouldTellOfSignIn(try account))
        #expect(await !monitor.shouldTellOfSignIn(try account))
        await monitor.usable(try account)
        #expect(await monitor.shouldTellOfSignIn(try account))
    }

    @Test("Webhooks: https, or http on loopback; shown without path or query")
    func webhooks() throws {
        for good in ["https://ntfy.sh/chappie-x", "http://127.0.0.1:8080/hook", "http://[::1]/h", "http://localhost/h"] {
            #expect(throws: Never.self) { try AlertTargets.webhook(good) }
        }
        for bad in [
            "http://10.0.0.2/h", "ftp://example.com/", "not a url", "http://127.0.0.1.example.com/h", "file:///etc/passwd", "http://127.0.0.08/h",
        ] {
            #expect(throws: ServiceError.self) { try AlertTargets.webhook(bad) }
        }
        #expect(AlertTargets.redacted(try #require(URL(string: "https://hooks.slack.com/services/T0/B0/secret"))) == "https://hooks.slack.com/…")
        #expect(AlertTargets.redacted(try #require(URL(string: "http://127.0.0.1:9/?topic=x"))) == "http://127.0.0.1:9/…")
        #expect(AlertTargets.redacted(try #require(URL(string: "http://[::1]:9/x"))) == "http://[::1]:9/…")
        #expect(try AlertTargets.thresholds("100, 80,95,80") == [80, 95, 100])
        for bad in ["", "80,", "0", "101", "8e1", "-5", "nan"] { #expect(throws: ServiceError.self) { try AlertTargets.thresholds(bad) } }
    }

    @Test("The body: the documented fields, null where they do not apply, and nothing else")
    func body() throws {
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        let event = AlertEvent(.signinRequired, account: "work", at: at, message: "work must be signed in again")
        let object = try #require(try JSONSerialization.jsonObject(with: event.json) as? [String: Any])
        #expect(Set(object.keys) == ["event", "account", "window", "usedPercent", "resetsAt", "at", "message"])
        #expect(object["event"] as? String == "signin_required" && object["window"] is NSNull && object["at"] as? String == "2027-01-15T08:00:00Z")
    }
}

@Suite("This machine's settings file: what it refuses to read or write")
struct LocalSettingsTests {
    @Test("Settings too large to read back are not written; a FIFO as the alert state is not read (nor waited on)")
    func limits() throws {
        let directory = try TestTokens.temporaryDirectory("chappie-local-settings")
        defer { try? FileManager.default.removeItem(at: directory) }
        var settings = LocalSettings()
        settings.alertCommand = "notify " + String(repeating: "x", count: 70_000)
        #expect(throws: ServiceError.self) { try settings.save(in: directory) }
        settings.alertCommand = "notify-send chappie"
        try settings.save(in: directory)
        #expect(try LocalSettings.load(from: directory) == settings)
        #expect(mkfifo(directory.appendingPathComponent("alerts-state.json").path, 0o600) == 0)
        _ = AlertMonitor(directory: directory, thresholds: [80])
    }
}

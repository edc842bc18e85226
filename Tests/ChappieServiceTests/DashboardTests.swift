import ChappieCore
@testable import ChappieService
import ChappieStore
import ChappieTestSupport
import Foundation
import Testing

@Suite("The daemon's dashboard, from a store with known readings")
struct DashboardTests {
    // In the past, as readings are: one dated ahead of the clock is passed over.
    private let now = Date(timeIntervalSince1970: 1_767_945_600)

    /// A store with ada (a hostile e-mail and plan; three readings in the last 7 days and one
    /// before) and bob (no readings).
    private func store() async throws -> (SQLiteAccountStore, URL) {
        let home = try TestTokens.temporaryDirectory("chappie-dashboard")
        let store = try await StoreOpener.open(StoreOptions(home: home.path, environment: [:])).local!
        let ada = try await store.save(
            info: ChappieAccountInfo(
                email: "ada+<script>alert('x')</script>@example.com", userID: "u-ada", accountID: "acct-ada", plan: ChappiePlan(rawValue: "pro<b>")),
            credentials: Credentials(idToken: "i", accessToken: "access-secret", refreshToken: "refresh-secret"), accessTokenExpiresAt: nil,
            refreshedAt: nil, name: try AccountName("ada"), event: .imported
        ).account
        _ = try await store.save(
            info: ChappieAccountInfo(email: "bob@example.com", userID: "u-bob", accountID: "acct-bob", plan: .plus),
            credentials: Credentials(idToken: "i", accessToken: "a", refreshToken: "r"), accessTokenExpiresAt: nil, refreshedAt: nil,
            name: try AccountName("bob"), event: .imported)
        for (hoursAgo, five) in [(8 * 24.0, 90.0), (30, 10), (20, 40), (1, 60)] {
            let snapshot = ChappieUsageLimitSnapshot(
                limitID: "codex", plan: nil,
                shortWindow: ChappieUsageWindow(usedPercent: five, windowMinutes: 300, resetsAt: now.addingTimeInterval(20 * 60)),
                longWindow: ChappieUsageWindow(usedPercent: 20, windowMinutes: 10080, resetsAt: now.addingTimeInterval(86400)))
            try await store.recordUsage([snapshot], for: ada, source: .poll, at: now.addingTimeInterval(-hoursAgo * 3600))
        }
        return (store, home)
    }

    @Test("Each account's tokens per UTC day, the last 14 days, as bars")
    func tokenBars() async throws {
        let (store, home) = try await store()
        defer { try? FileManager.default.removeItem(at: home) }
        let ada = try await store.account(named: try AccountName("ada"))
        let day = Date.ISO8601FormatStyle().year().month().day()
        try await store.recordDailyTokens(
            [
                (now.addingTimeInterval(-20 * 86400).formatted(day), 999), (now.addingTimeInterval(-86400).formatted(day), 1200),
                (now.formatted(day), 34),
            ],
            for: ada, at: now)
        let page = try await Dashboard(store: store, timeZone: try #require(TimeZone(identifier: "UTC"))).page(now: now)
        #expect(page.contains("Tokens per day (UTC), last 14 days: 1234"), "the day 20 days ago is not counted")
        #expect(page.contains("<title>\(now.formatted(day)): 34 tokens</title>"))
        #expect(page.components(separatedBy: "<rect class=\"tokens\"").count - 1 == 28, "14 bars for each of ada and bob")
    }

    @Test("A chart per account and window with a point per reading of the last 7 days; hostile text escaped; no token; one script, the known one")
    func page() async throws {
        let (store, home) = try await store()
        defer { try? FileManager.default.removeItem(at: home) }
        let dashboard = Dashboard(store: store, timeZone: try #require(TimeZone(identifier: "Asia/Kolkata")))
        let page = try await dashboard.page(now: now)
        let parsed = try ChartPage(page)
        #expect(parsed.charts.map(\.key) == ["ada/5h", "ada/weekly", "bob/5h", "bob/weekly"])
        #expect(parsed.charts.map(\.points) == [3, 3, 0, 0])
        #expect(page.contains("ada+&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;@example.com") && page.contains("pro&lt;b&gt;"))
        #expect(page.components(separatedBy: "<script").count == 2)
        #expect(page.contains("<script>" + Dashboard.script + "</script>"))
        #expect(!page.contains("access-secret") && !page.contains("refresh-secret"))
        #expect(page.contains("(Asia/Kolkata)"))
        // 1_767_945_600 (08:00 UTC) + 20 min is 13:50 in Kolkata.
        #expect(page.contains(">60</span> %, resets 2026-01-09 13:50"))

        let json = try await dashboard.json(now: now)
        #expect(!json.contains("access-secret") && !json.contains("refresh-secret"))
        let rows = JSONDocument(Data(json.utf8))
        #expect(rows.string(0, "name") == "ada" && rows.string(1, "name") == "bob")
        #expect(rows.string(0, "readAt") == "2026-01-09T07:00:00.000Z")
        for index in 0..<2 {
            let revision = try #require(rows.string(index, "revision"))
            #expect(page.contains("data-account=\"\(rows.string(index, "name") ?? "")\" data-revision=\"\(revision)\""))
        }
    }

    @Test(
        "A reset time passing changes the account's revision and says no reading came since; an account without readings keeps its revision within the hour"
    )
    func resetPassing() async throws {
        let (store, home) = try await store()
        defer { try? FileManager.default.removeItem(at: home) }
        let dashboard = Dashboard(store: store, timeZone: try #require(TimeZone(identifier: "UTC")))
        let before = try await dashboard.rows(now: now)
        // Half an hour later (08:30; the hour began at 08:00 with `now`): the 5-hour end, 08:20, has passed.
        let later = now.addingTimeInterval(30 * 60)
        let after = try await dashboard.rows(now: later)
        #expect(before[0].revision != after[0].revision)
        #expect(before[1].revision == after[1].revision)
        #expect(try await dashboard.page(now: later).contains(">60</span> %, reset at 2026-01-09 08:20; no reading since"))
        // The next hour: every revision changes, as the charts' 7 days have moved on.
        #expect(try await dashboard.rows(now: now.addingTimeInterval(3600))[1].revision != before[1].revision)
        #expect(try await dashboard.rows(now: now).map(\.revision) == before.map(\.revision))
    }

    @Test("The page tells the truth: the latest reading's age, a failed poll's reason, a window near or at its limit in colour and words")
    func truth() async throws {
        let (store, home) = try await store()
        defer { try? FileManager.default.removeItem(at: home) }
        let dashboard = Dashboard(store: store, timeZone: try #require(TimeZone(identifier: "UTC")))
        // ada's newest reading is an hour old: 60 % of the 5-hour window, 20 % of the week.
        var page = try await dashboard.page(now: now)
        #expect(
            page.contains("Latest reading <span class=\"age\" data-at=\"2026-01-09T07:00:00.000Z\">1 h 0 min ago</span> (2026-01-09 07:00)"),
            "\(page)")
        #expect(page.contains("No reading yet"))
        #expect(!page.contains("class=\"problem\""))
        #expect(!page.contains("near its limit") && !page.contains(">full<"))

        let ada = try await store.account(named: AccountName("ada"))
        try await store.recordFailure(of: ada, message: "usage poll failed: the usage endpoint answered HTTP 503", event: .usagePollFailed)
        page = try await dashboard.page(now: now)
        #expect(page.contains("<p class=\"problem\">Last poll or refresh failed: usage poll failed: the usage endpoint answered HTTP 503</p>"))
        // A poll that works clears the note: 85 % of the 5-hour window, the week used up. It clears
        // the note only when it is a poll of now (this machine's clock), and is shown 2 minutes on.
        let polled = Date()
        let snapshot = ChappieUsageLimitSnapshot(
            limitID: "codex", plan: nil,
            shortWindow: ChappieUsageWindow(usedPercent: 85, windowMinutes: 300, resetsAt: polled.addingTimeInterval(20 * 60)),
            longWindow: ChappieUsageWindow(usedPercent: 100, windowMinutes: 10080, resetsAt: polled.addingTimeInterval(86400)))
        try await store.recordUsage([snapshot], for: ada, source: .poll, at: polled)
        page = try await dashboard.page(now: polled.addingTimeInterval(120))
        #expect(!page.contains("class=\"problem\""))
        #expect(page.contains("2 min ago"))
        #expect(
            page.contains(
                "<div class=\"window high\">5-hour <span class=\"used\" data-field=\"5h\">85</span> % <strong class=\"mark\">near its limit</strong>"),
            "\(page)")
        #expect(
            page.contains(
                "<div class=\"window binding full\">weekly <span class=\"used\" data-field=\"weekly\">100</span> % <strong class=\"mark\">full</strong>"
            ), "\(page)")
        #expect(page.contains(".window.high .bar span { background: #d97706; }"))
    }

    @Test("The page warns when the daemon has not polled for over twice its interval, and not before")
    func staleDaemon() async throws {
        let (store, home) = try await store()
        defer { try? FileManager.default.removeItem(at: home) }
        func dashboard(lastPoll: Date?) throws -> Dashboard {
            Dashboard(
                store: store, timeZone: try #require(TimeZone(identifier: "UTC")),
                polling: Dashboard.Polling(interval: .seconds(600), startedAt: now.addingTimeInterval(-3600), lastPoll: { lastPoll }))
        }
        /// The page's line about the daemon (the script, which has the same words, left out).
        func line(_ page: String) -> String {
            page.components(separatedBy: "<p class=\"daemon").dropFirst().first?.components(separatedBy: "</p>").first ?? ""
        }
        let fresh = line(try await dashboard(lastPoll: now.addingTimeInterval(-19 * 60)).page(now: now))
        #expect(fresh.hasPrefix("\" id=\"daemon\""), "\(fresh)")
        #expect(fresh.contains("Last poll <span class=\"age\""))
        #expect(!fresh.contains("has not polled"))
        let stale = line(try await dashboard(lastPoll: now.addingTimeInterval(-21 * 60)).page(now: now))
        #expect(stale.hasPrefix(" stale\" id=\"daemon\""))
        #expect(stale.contains("The daemon has not polled, and no reading came, for over twice its poll interval (10m)"))
        let never = line(try await dashboard(lastPoll: nil).page(now: now))
        #expect(never.contains("No poll yet since the daemon started") && never.contains("has not polled"))
        // The script does the same between reloads, and says when the daemon stops answering.
        #expect(Dashboard.script.contains("2000 * Number(line.getAttribute(\"data-poll-interval\"))"))
        #expect(Dashboard.script.contains("The daemon does not answer since"))
    }
}

import ChappieCore
import ChappieService
import ChappieStore
import ChappieTestSupport
import Foundation
import SwiftCSV
import Testing

@Suite("Usage reports: groupings with exact CSV, hostile values, time zones and DST")
struct UsageReportTests {
    private struct Fixture {
        let store: SQLiteAccountStore
        let home: URL
        var accounts: [String: Account] = [:]

        init() async throws {
            home = try TestTokens.temporaryDirectory("chappie-report")
            store = try await StoreOpener.open(StoreOptions(home: home.path, environment: [:])).local!
        }

        mutating func add(_ name: String, email: String, plan: String) async throws {
            accounts[name] = try await store.save(
                info: ChappieAccountInfo(email: email, userID: "user-\(name)", accountID: "acct-\(name)", plan: ChappiePlan(rawValue: plan)),
                credentials: Credentials(idToken: "i", accessToken: "a", refreshToken: "r"), accessTokenExpiresAt: nil, refreshedAt: nil,
                name: try AccountName(name), event: .imported
            ).account
        }

        /// A sample at an ISO 8601 time with the 5-hour and weekly use and reset times (unix seconds).
        func sample(
            _ name: String, _ time: String, five: Double?, fiveReset: Int = 1_800_000_000, week: Double?, weekReset: Int = 1_800_500_000,
            reached: Bool = false
        ) async throws {
            let date = try Date(time, strategy: .iso8601)
            let snapshot = ChappieUsageLimitSnapshot(
                limitID: "codex", plan: accounts[name]?.info.plan,
                shortWindow: five.map {
                    ChappieUsageWindow(usedPercent: $0, windowMinutes: 300, resetsAt: Date(timeIntervalSince1970: Double(fiveReset)))
                },
                longWindow: week.map {
                    ChappieUsageWindow(usedPercent: $0, windowMinutes: 10080, resetsAt: Date(timeIntervalSince1970: Double(weekReset)))
                },
                limitReached: reached)
            try await store.recordUsage([snapshot], for: try #require(accounts[name]), source: .poll, at: date)
        }

        func report(_ grouping: UsageReport.Grouping, zone: String = "UTC", since: String? = nil, until: String? = nil) async throws -> String {
            try await UsageReport.build(
                store: store, accounts: try await store.accounts(), since: try since.map { try Date($0, strategy: .iso8601) },
                until: try until.map { try Date($0, strategy: .iso8601) }, grouping: grouping, timeZone: try #require(TimeZone(identifier: zone))
            ).csv()
        }
    }

    private let header =
        "period_start,period_end,account,email,plan,samples,five_hour_peak_percent,five_hour_mean_percent,weekly_peak_percent,weekly_mean_percent,limit_reached,resets_seen\r\n"

    private func fixture() async throws -> Fixture {
        var fixture = try await Fixture()
        try await fixture.add("ada", email: "ada@example.com", plan: "plus")
        try await fixture.add("bob", email: "bob@example.com", plan: "pro")
        try await fixture.sample("ada", "2026-11-20T09:10:00Z", five: 10, week: 40)
        try await fixture.sample("ada", "2026-11-20T09:50:00Z", five: 30, week: 42)
        try await fixture.sample("ada", "2026-11-20T10:05:00Z", five: 100, week: 45, reached: true)
        try await fixture.sample("ada", "2026-11-20T15:00:00Z", five: 2, fiveReset: 1_800_018_000, week: 45)
        try await fixture.sample("bob", "2026-11-20T09:30:00Z", five: 50, week: nil)
        try await fixture.sample("ada", "2026-11-23T08:00:00Z", five: 5, fiveReset: 1_800_036_000, week: 1, weekReset: 1_801_000_000)
        return fixture
    }

    @Test("By hour")
    func byHour() async throws {
        let fixture = try await fixture()
        defer { try? FileManager.default.removeItem(at: fixture.home) }
        #expect(
            try await fixture.report(.hour, until: "2026-11-21T00:00:00Z") == header + """
                2026-11-20T09:00:00Z,2026-11-20T10:00:00Z,ada,ada@example.com,plus,2,30,20,42,41,0,0\r
                2026-11-20T09:00:00Z,2026-11-20T10:00:00Z,bob,bob@example.com,pro,1,50,50,,,0,0\r
                2026-11-20T10:00:00Z,2026-11-20T11:00:00Z,ada,ada@example.com,plus,1,100,100,45,45,1,0\r
                2026-11-20T15:00:00Z,2026-11-20T16:00:00Z,ada,ada@example.com,plus,1,2,2,45,45,0,1\r

                """)
    }

    @Test("By day and by week (ISO weeks from Monday)")
    func byDayAndWeek() async throws {
        let fixture = try await fixture()
        defer { try? FileManager.default.removeItem(at: fixture.home) }
        #expect(
            try await fixture.report(.day) == header + """
                2026-11-20T00:00:00Z,2026-11-21T00:00:00Z,ada,ada@example.com,plus,4,100,35.5,45,43,1,1\r
                2026-11-20T00:00:00Z,2026-11-21T00:00:00Z,bob,bob@example.com,pro,1,50,50,,,0,0\r
                2026-11-23T00:00:00Z,2026-11-24T00:00:00Z,ada,ada@example.com,plus,1,5,5,1,1,0,2\r

                """)
        #expect(
            try await fixture.report(.week) == header + """
                2026-11-16T00:00:00Z,2026-11-23T00:00:00Z,ada,ada@example.com,plus,4,100,35.5,45,43,1,1\r
                2026-11-16T00:00:00Z,2026-11-23T00:00:00Z,bob,bob@example.com,pro,1,50,50,,,0,0\r
                2026-11-23T00:00:00Z,2026-11-30T00:00:00Z,ada,ada@example.com,plus,1,5,5,1,1,0,2\r

                """)
    }

    @Test("By window: one row per observed window with its peak")
    func byWindow() async throws {
        let fixture = try await fixture()
        defer { try? FileManager.default.removeItem(at: fixture.home) }
        #expect(
            try await fixture.report(.window, until: "2026-11-21T00:00:00Z") == """
                account,email,window,resets_at,first_sample,last_sample,samples,peak_percent,limit_reached\r
                ada,ada@example.com,5h,2027-01-15T08:00:00Z,2026-11-20T09:10:00Z,2026-11-20T10:05:00Z,3,100,1\r
                bob,bob@example.com,5h,2027-01-15T08:00:00Z,2026-11-20T09:30:00Z,2026-11-20T09:30:00Z,1,50,0\r
                ada,ada@example.com,5h,2027-01-15T13:00:00Z,2026-11-20T15:00:00Z,2026-11-20T15:00:00Z,1,2,0\r
                ada,ada@example.com,weekly,2027-01-21T02:53:20Z,2026-11-20T09:10:00Z,2026-11-20T15:00:00Z,4,45,1\r

                """)
    }

    @Test("By machine, on the local store: one row per account, all of them this host's")
    func byMachine() async throws {
        let fixture = try await fixture()
        defer { try? FileManager.default.removeItem(at: fixture.home) }
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, 255)
        let host =
            String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: ".").first.map(String.init) ?? ""
        #expect(
            try await fixture.report(.machine, until: "2026-11-21T00:00:00Z") == """
                machine,account,email,samples,first_sample,last_sample,five_hour_peak_percent,weekly_peak_percent\r
                \(host),ada,ada@example.com,4,2026-11-20T09:10:00Z,2026-11-20T15:00:00Z,100,45\r
                \(host),bob,bob@example.com,1,2026-11-20T09:30:00Z,2026-11-20T09:30:00Z,50,\r

                """)
    }

    @Test("Days follow the time zone, including the 25-hour day at the end of summer time")
    func daylightSaving() async throws {
        var fixture = try await Fixture()
        defer { try? FileManager.default.removeItem(at: fixture.home) }
        try await fixture.add("ada", email: "ada@example.com", plan: "plus")
        // Paris leaves summer time on 2026-10-25 at 03:00 local (01:00 UTC).
        try await fixture.sample("ada", "2026-10-24T22:30:00Z", five: 10, week: 1)  // 00:30 local on the 25th (UTC+2)
        try await fixture.sample("ada", "2026-10-25T22:30:00Z", five: 20, week: 2)  // 23:30 local on the 25th (UTC+1)
        try await fixture.sample("ada", "2026-10-25T23:30:00Z", five: 30, week: 3)  // 00:30 local on the 26th
        #expect(
            try await fixture.report(.day, zone: "Europe/Paris") == header + """
                2026-10-25T00:00:00+02:00,2026-10-26T00:00:00+01:00,ada,ada@example.com,plus,2,20,15,2,1.5,0,0\r
                2026-10-26T00:00:00+01:00,2026-10-27T00:00:00+01:00,ada,ada@example.com,plus,1,30,30,3,3,0,0\r

                """)
        // The same samples in UTC fall on other days; a half-hour zone splits hours at :30.
        #expect(try await fixture.report(.day, zone: "UTC").hasPrefix(header + "2026-10-24T00:00:00Z,2026-10-25T00:00:00Z,ada"))
        let india = try await fixture.report(.hour, zone: "Asia/Kolkata")
        #expect(india.contains("2026-10-25T04:00:00+05:30,2026-10-25T05:00:00+05:30,ada"))
    }

    @Test("Hostile e-mails and plans survive the CSV: an independent parser reads back the same values")
    func hostileValues() async throws {
        var fixture = try await Fixture()
        defer { try? FileManager.default.removeItem(at: fixture.home) }
        let emails = [
            "comma,in@example.com", "quote\"in@example.com", "line\nbreak@example.com", "crlf\r\nin@example.com", "ünï©ødé@例え.jp",
            " spaced @example.com",
        ]
        let plans = ["plus, with comma", "pro \"quoted\"", "multi\nline", "plán-ü", "ok", "x"]
        for (index, email) in emails.enumerated() {
            try await fixture.add("user\(index)", email: email, plan: plans[index])
            try await fixture.sample("user\(index)", "2026-11-20T09:10:00Z", five: Double(index), week: nil)
        }
        let csv = try await fixture.report(.day)
        let parsed = try CSV<Named>(string: csv)
        #expect(parsed.header == UsageReport.periodColumns)
        #expect(parsed.rows.count == emails.count)
        for (index, email) in emails.enumerated() {
            let row = try #require(parsed.rows.first { $0["account"] == "user\(index)" })
            #expect(row["email"] == email)
            #expect(row["plan"] == plans[index])
            #expect(row["five_hour_peak_percent"] == String(index))
        }
    }

    @Test("Text cells a spreadsheet would run as formulas are neutralised with a quote; numbers keep their sign")
    func formulasNeutralised() async throws {
        var fixture = try await Fixture()
        defer { try? FileManager.default.removeItem(at: fixture.home) }
        let emails = ["=HYPERLINK(\"http://evil\")@example.com", "+1@example.com", "-x@example.com", "@at@example.com", "plain@example.com"]
        for (index, email) in emails.enumerated() {
            try await fixture.add("f\(index)", email: email, plan: index == 0 ? "=cmd|' /C calc'!A0" : "plus")
            try await fixture.sample("f\(index)", "2026-11-20T09:10:00Z", five: Double(index), week: nil)
        }
        let parsed = try CSV<Named>(string: try await fixture.report(.day))
        for (index, email) in emails.enumerated() {
            let row = try #require(parsed.rows.first { $0["account"] == "f\(index)" })
            #expect(row["email"] == (index < 4 ? "'" + email : email))
        }
        #expect(parsed.rows.first { $0["account"] == "f0" }?["plan"] == "'=cmd|' /C calc'!A0")
        #expect(UsageReport.Cell.number(-5).csvText == "-5")
        #expect(CSVWriter.neutralized("\tx") == "'\tx")
        #expect(CSVWriter.neutralized("a=b") == "a=b")
    }

    @Test("Fields are quoted only when RFC 4180 needs it")
    func quoting() {
        #expect(
            CSVWriter.record(["a", "b c", "d,e", "f\"g", "h\ni", "", " lead", "trail "])
                == "a,b c,\"d,e\",\"f\"\"g\",\"h\ni\",,\" lead\",\"trail \"\r\n")
    }
}

import ChappieCore
@testable import ChappieService
import ChappieTestSupport
import Foundation
import Testing

@Suite("The HTML usage report: self-contained charts")
struct UsageHTMLReportTests {
    private func account(_ id: Int64, _ name: String, email: String) throws -> Account {
        Account(
            id: id, uuid: UUID(), name: try AccountName(name),
            info: ChappieAccountInfo(email: email, userID: "u\(id)", accountID: "a\(id)", plan: .plus, isFedRAMPAccount: false),
            status: .ok, accessTokenExpiresAt: nil, lastRefreshAt: nil, lastError: nil, codexHome: nil, reservePercent: nil,
            createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0), isActive: id == 1)
    }

    /// An account's charts from readings at these minutes past a fixed start: 5-hour use and reset
    /// time (minutes past the start), weekly use.
    private func series(_ id: Int64, _ values: [(minute: Int, five: Double, reset: Int, weekly: Double?)]) -> UsageHTMLReport.AccountSeries {
        var series = UsageHTMLReport.AccountSeries()
        for value in values {
            series.add(
                UsageReading(
                    accountID: id, observedAt: 1_800_000_000 + Double(value.minute * 60), fiveHourUsed: value.five,
                    fiveHourResetsAt: 1_800_000_000 + Int64(value.reset * 60),
                    weeklyUsed: value.weekly, weeklyResetsAt: value.weekly == nil ? nil : 1_900_000_000, limitReached: false))
        }
        return series
    }

    @Test("The page parses; one chart per account and window, a point per reading, resets marked; no script, link or external asset")
    func page() throws {
        let ada = try account(1, "ada", email: "ada@example.com")
        let bob = try account(2, "bob", email: "bob+<tag>&\"quote\"@example.com")
        let drawn: [Int64: UsageHTMLReport.AccountSeries] = [
            1: series(1, [(0, 10, 300, 40), (60, 50, 300, 41), (120, 95, 300, 43), (300, 2, 600, 44), (360, 20, 600, 45)]),
            2: series(2, [(0, 5, 300, nil), (30, 7, 300, nil)]),
        ]
        let page = UsageHTMLReport.render(
            accounts: [ada, bob], series: drawn, since: nil, until: Date(timeIntervalSince1970: 1_800_000_000 + 400 * 60),
            timeZone: try #require(TimeZone(identifier: "UTC")), now: Date(timeIntervalSince1970: 1_800_100_000))
        let charts = try ChartPage(page)
        #expect(charts.charts.map(\.key) == ["ada/5h", "ada/weekly", "bob/5h", "bob/weekly"])
        #expect(charts.charts.map(\.points) == [5, 5, 2, 0])
        #expect(charts.charts.map { $0.attributes["data-points"] } == ["5", "5", "2", "0"])
        #expect(charts.charts.map(\.dots) == [5, 5, 2, 0])
        #expect(charts.charts.map(\.resets) == [1, 0, 0, 0])
        // 400 minutes from 1_800_000_000 (2027-01-15 08:00 UTC): a mark every hour, 08:00 to 14:00.
        #expect(charts.charts.map(\.ticks) == [7, 7, 7, 7])
        #expect(page.contains(">08:00</text>") && page.contains(">14:00</text>"))
        #expect(!charts.elements.contains("script") && !charts.elements.contains("link") && !charts.elements.contains("img"))
        #expect(!page.contains("href=") && !page.contains("src=") && !page.contains("url("))
        // The hostile e-mail is text, escaped; the page says where each window stands.
        #expect(page.contains("bob+&lt;tag&gt;&amp;&quot;quote&quot;@example.com"))
        #expect(page.contains("5-hour window, last reading 20 % (14:00)"), "the reading's own time, not now")
    }

    @Test("The time axis: local midnights over a week, hours over a short period, eight marks at most, none for an empty period")
    func ticks() throws {
        let kolkata = try #require(TimeZone(identifier: "Asia/Kolkata"))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = kolkata
        let end = Date(timeIntervalSince1970: 1_800_000_000)
        let week = UsageHTMLReport.ticks(from: end.addingTimeInterval(-7 * 86400), to: end, timeZone: kolkata)
        // 1_800_000_000 is 13:30 in Kolkata (UTC+5:30): seven midnights in the seven days before it.
        #expect(week.count == 7)
        #expect(
            week.allSatisfy { calendar.dateComponents([.hour, .minute, .second], from: $0.date) == DateComponents(hour: 0, minute: 0, second: 0) })
        #expect(zip(week, week.dropFirst()).allSatisfy { $1.date.timeIntervalSince($0.date) == 86400 })
        #expect(week.last?.label == "Fri 15")

        let utc = try #require(TimeZone(identifier: "UTC"))
        let evening = Date(timeIntervalSince1970: 1_799_971_200 - 5 * 3600)  // 2027-01-14 19:00 UTC
        let hours = UsageHTMLReport.ticks(from: evening, to: evening.addingTimeInterval(6 * 3600), timeZone: utc)
        #expect(hours.map(\.label) == ["19:00", "20:00", "21:00", "22:00", "23:00", "Fri 15", "01:00"])
        // A day from one second past 19:00: every 6 hours of the clock.
        let day = UsageHTMLReport.ticks(from: evening.addingTimeInterval(1), to: evening.addingTimeInterval(24 * 3600), timeZone: utc)
        #expect(day.map(\.label) == ["Fri 15", "06:00", "12:00", "18:00"])

        // 60 days: a mark every 8 days at local midnight, from the first midnight after 2026-11-16 13:30.
        let season = UsageHTMLReport.ticks(from: end.addingTimeInterval(-60 * 86400), to: end, timeZone: kolkata)
        #expect(season.map(\.label) == ["Nov 17", "Nov 25", "Dec 3", "Dec 11", "Dec 19", "Dec 27", "Jan 4", "Jan 12"])
        // A week and a few seconds (a report --since 7d) is still a mark a day.
        #expect(UsageHTMLReport.ticks(from: end.addingTimeInterval(-7 * 86400 - 5), to: end, timeZone: kolkata).count == 7)
        #expect(season.allSatisfy { calendar.component(.hour, from: $0.date) == 0 })
        #expect(UsageHTMLReport.ticks(from: end, to: end, timeZone: utc).isEmpty)

        // Santiago's clocks went from 00:00 to 01:00 on 2026-09-06: that day begins at 01:00, and
        // the marks after it are at midnight again.
        let santiago = try #require(TimeZone(identifier: "America/Santiago"))
        var chile = Calendar(identifier: .gregorian)
        chile.timeZone = santiago
        let start = try #require(chile.date(from: DateComponents(year: 2026, month: 9, day: 3, hour: 12)))
        let spring = UsageHTMLReport.ticks(from: start, to: start.addingTimeInterval(7 * 86400), timeZone: santiago)
        #expect(spring.map(\.label) == ["Fri 4", "Sat 5", "Sun 6", "Mon 7", "Tue 8", "Wed 9", "Thu 10"])
        #expect(spring.map { chile.component(.hour, from: $0.date) } == [0, 0, 1, 0, 0, 0, 0])
    }

    @Test("A dense chart keeps a vertex per reading and drops the dots that would merge")
    func dense() throws {
        let ada = try account(1, "ada", email: "ada@example.com")
        var values: [(minute: Int, five: Double, reset: Int, weekly: Double?)] = []
        for step in 0..<500 {
            // A 5-hour window every 15 readings, climbing 6 % a reading.
            let five = Double(step % 15 * 6), weekly = Double(step) / 10
            values.append((minute: step * 20, five: five, reset: (step / 15 + 1) * 300, weekly: weekly))
        }
        let page = UsageHTMLReport.render(
            accounts: [ada], series: [1: series(1, values)], since: nil, until: Date(timeIntervalSince1970: 1_800_000_000 + 500 * 20 * 60),
            timeZone: try #require(TimeZone(identifier: "UTC")), now: Date(timeIntervalSince1970: 1_800_100_000))
        let charts = try ChartPage(page).charts
        #expect(charts.map(\.points) == [500, 500])
        #expect(charts.map(\.dots) == [0, 0])
        #expect(charts.first?.resets == 33)
    }

    @Test("Numbers on a page: at most one decimal, a sign when negative, 0 for what is not finite")
    func numbers() {
        #expect(
            [42, 42.5, 42.04, 42.96, 0, -0.03, -0.3, -12.25, 99.95, .nan, .infinity, 1e300].map(UsageHTMLReport.format)
                == ["42", "42.5", "42", "43", "0", "0", "-0.3", "-12.3", "100", "0", "0", "0"])
    }
}

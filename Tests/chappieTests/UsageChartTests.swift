import ChappieCore
@testable import chappie_full
import Foundation
import Testing

@Suite("Usage charts for the terminal")
struct UsageChartTests {
    /// Readings of the 5-hour window at these minutes past 08:00 UTC, with this use, and the reset
    /// time at this many minutes past 08:00.
    private func samples(_ readings: [(minute: Int, used: Double, reset: Int)]) -> [UsageSample] {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        return readings.map { reading in
            let window = ChappieUsageWindow(
                usedPercent: reading.used, windowMinutes: 300, resetsAt: start.addingTimeInterval(Double(reading.reset * 60)))
            return UsageSample(
                accountID: 1, observedAt: start.addingTimeInterval(Double(reading.minute * 60)), source: .poll, limitID: "codex",
                snapshot: ChappieUsageLimitSnapshot(limitID: "codex", plan: nil, shortWindow: window, longWindow: nil))
        }
    }

    @Test("ASCII: bars as high as the readings, held between them, the reset marked, fitted to the width")
    func ascii() throws {
        let chart = UsageChart(window: .fiveHour, width: 24, height: 4, style: .ascii, timeZone: try #require(TimeZone(identifier: "UTC")))
        let lines = chart.lines(
            account: try AccountName("work"),
            samples: samples([(0, 0, 120), (50, 50, 120), (100, 100, 120), (150, 25, 420), (200, 75, 420)]))
        // 20 columns over 200 minutes: the readings fall at columns 0, 5, 10, 14 and 19, and each holds
        // until the next (0 % draws nothing). 4 rows of 25 %. The window ran out at 10:00 (minute 120,
        // column 11), which the reading at minute 150 shows: the mark is at 10:00.
        #expect(
            Array(lines[1...4]) == [
                "100|          ####",
                "   |          ####     #",
                "   |     #########     #",
                "  0|     ###############",
            ])
        #expect(lines[5] == "   +-----------^--------")
        // 24 columns leave no room for the dates in the title, nor for all of it.
        #expect(lines[0] == "work: 5-hour window, use")
        #expect(lines.allSatisfy { $0.count <= 24 })
        #expect(lines[6] == "    08:00          11:20")
        #expect(lines[7] == "    ^ = the window reset")
        let wide = UsageChart(window: .fiveHour, width: 80, height: 4, style: .ascii, timeZone: try #require(TimeZone(identifier: "UTC")))
            .lines(account: try AccountName("work"), samples: samples([(0, 0, 120), (150, 25, 420), (200, 75, 420)]))
        #expect(wide[0] == "work: 5-hour window, used %  (2027-01-15 08:00 → 2027-01-15 11:20)")
        #expect(wide.last?.hasSuffix("^ = the window reset") == true)
        #expect(wide.allSatisfy { $0.count <= 80 })
        #expect(lines.allSatisfy { $0.unicodeScalars.allSatisfy(\.isASCII) })
    }

    @Test("Unicode: eight levels a row; a window never reported says so")
    func unicode() throws {
        let chart = UsageChart(window: .fiveHour, width: 20, height: 2, style: .unicode, timeZone: try #require(TimeZone(identifier: "UTC")))
        let lines = chart.lines(account: try AccountName("work"), samples: samples([(0, 25, 300), (10, 75, 300)]))
        // 16 columns; 25 % of two rows is half the first row (▄), 75 % fills it and half the second.
        #expect(lines[2] == "  0|" + "▄" + String(repeating: "▄", count: 14) + "█")
        #expect(lines[1] == "100|" + String(repeating: " ", count: 15) + "▄")
        #expect(lines[3] == "   +" + String(repeating: "─", count: 16))
        let weekly = UsageChart(window: .weekly, width: 40, style: .unicode).lines(account: try AccountName("work"), samples: samples([(0, 25, 300)]))
        #expect(weekly == ["work: weekly window: no readings"])
        #expect(UsageChart.style(environment: ["NO_COLOR": "1", "TERM": "xterm"]) == .ascii)
        #expect(UsageChart.style(environment: ["TERM": "dumb"]) == .ascii)
        #expect(UsageChart.style(environment: ["TERM": "xterm-256color"]) == .unicode)
    }

    @Test("Narrow and long: every line fits; an idle window whose end moves ahead is not a reset, an early reset is; the width is bounded")
    func narrowAndResets() throws {
        let utc = try #require(TimeZone(identifier: "UTC"))
        // Two days at width 20 (16 columns): the two dated times do not both fit under the axis.
        let long = UsageChart(window: .fiveHour, width: 20, height: 3, style: .ascii, timeZone: utc)
            .lines(account: try AccountName("a-rather-long-account-name"), samples: samples([(0, 10, 300), (2880, 60, 3000)]))
        #expect(long.allSatisfy { $0.count <= 20 }, "\(long)")
        #expect(long[0] == "a-rather-long-accoun")
        #expect(long.contains("    01-15 08:00"))

        // Idle: the use stays at 0 and the reported end stays five hours ahead of each reading.
        let idle = UsageChart(window: .fiveHour, width: 40, height: 2, style: .ascii, timeZone: utc)
            .lines(account: try AccountName("a"), samples: samples((0..<10).map { (minute: $0 * 30, used: 0, reset: $0 * 30 + 300) }))
        #expect(!idle.contains { $0.contains("^") }, "\(idle)")
        // Reset early: the end changes before it came, and the use falls.
        let early = UsageChart(window: .fiveHour, width: 40, height: 2, style: .ascii, timeZone: utc)
            .lines(account: try AccountName("a"), samples: samples([(0, 40, 300), (60, 80, 300), (120, 5, 420)]))
        #expect(early.contains("    ^ = the window reset"))
        // 36 columns over 120 minutes: the early reset at minute 120 is the last column.
        #expect(early.contains("   +" + String(repeating: "-", count: 35) + "^"), "\(early)")
        #expect(
            UsageChart(window: .weekly, width: 20, style: .ascii).lines(account: try AccountName("a-rather-long-account-name"), samples: [])
                == ["a-rather-long-accoun"])
        #expect(UsageChart(window: .fiveHour, width: 40, height: Int.max, style: .ascii).height == 100)
        #expect(UsageChart(window: .fiveHour, width: 9_999_999, style: .ascii).width == 1000)
        #expect(UsageChart(window: .fiveHour, width: -5, style: .ascii).width == 20)
    }
}

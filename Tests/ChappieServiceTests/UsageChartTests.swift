import ChappieCore
import ChappieService
import Foundation
import Testing

@Suite("Usage charts for the terminal")
struct UsageChartTests {
    /// Readings of the 5-hour window at these minutes past 08:00 UTC, with this use and reset time.
    private func samples(_ readings: [(minute: Int, used: Double, reset: Int)]) -> [UsageSample] {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        return readings.map { reading in
            let window = ChappieUsageWindow(usedPercent: reading.used, windowMinutes: 300, resetsAt: Date(timeIntervalSince1970: Double(reading.reset)))
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
            samples: samples([(0, 0, 10), (50, 50, 10), (100, 100, 10), (150, 25, 20), (200, 75, 20)]))
        // 20 columns over 200 minutes: the readings fall at columns 0, 5, 10, 14 and 19, and each holds
        // until the next (0 % draws nothing). 4 rows of 25 %; the reset (the 4th reading) at column 14.
        #expect(Array(lines[1...4]) == [
            "100|          ####",
            "   |          ####     #",
            "   |     #########     #",
            "  0|     ###############",
        ])
        #expect(lines[5] == "   +--------------^-----")
        // 24 columns leave no room for the dates in the title.
        #expect(lines[0] == "work: 5-hour window, used %".prefix(24) || lines[0] == "work: 5-hour window, used %")
        #expect(lines[6] == "    08:00          11:20")
        #expect(lines[7] == "    ^ = the window reset")
        let wide = UsageChart(window: .fiveHour, width: 80, height: 4, style: .ascii, timeZone: try #require(TimeZone(identifier: "UTC")))
            .lines(account: try AccountName("work"), samples: samples([(0, 0, 10), (150, 25, 20), (200, 75, 20)]))
        #expect(wide[0] == "work: 5-hour window, used %  (2027-01-15 08:00 → 2027-01-15 11:20)")
        #expect(wide.last?.hasSuffix("^ = the window reset") == true)
        #expect(wide.allSatisfy { $0.count <= 80 })
        #expect(lines.allSatisfy { $0.unicodeScalars.allSatisfy(\.isASCII) })
    }

    @Test("Unicode: eight levels a row; a window never reported says so")
    func unicode() throws {
        let chart = UsageChart(window: .fiveHour, width: 20, height: 2, style: .unicode, timeZone: try #require(TimeZone(identifier: "UTC")))
        let lines = chart.lines(account: try AccountName("work"), samples: samples([(0, 25, 10), (10, 75, 10)]))
        // 16 columns; 25 % of two rows is half the first row (▄), 75 % fills it and half the second.
        #expect(lines[2] == "  0|" + "▄" + String(repeating: "▄", count: 14) + "█")
        #expect(lines[1] == "100|" + String(repeating: " ", count: 15) + "▄")
        #expect(lines[3] == "   +" + String(repeating: "─", count: 16))
        let weekly = UsageChart(window: .weekly, width: 40, style: .unicode).lines(account: try AccountName("work"), samples: samples([(0, 25, 10)]))
        #expect(weekly == ["work: weekly window: no readings"])
        #expect(UsageChart.style(environment: ["NO_COLOR": "1", "TERM": "xterm"]) == .ascii)
        #expect(UsageChart.style(environment: ["TERM": "dumb"]) == .ascii)
        #expect(UsageChart.style(environment: ["TERM": "xterm-256color"]) == .unicode)
    }
}

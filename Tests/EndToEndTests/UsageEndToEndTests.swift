import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie usage and switch --best, run as a user runs them", .tags(.slow))
struct UsageEndToEndTests {
    @Test("Poll, show, list with headroom, switch --best with a Codex home, reserve, report to a file, history, prune")
    func usageLifecycle() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let (emulator, home) = (testbed.emulator, testbed.home)
            func chappie(_ arguments: [String]) async throws -> ProcessResult { try await testbed.chappie(arguments) }
            func curl(_ path: String, _ body: String) async throws { _ = try await testbed.control(path, method: "POST", body: body) }
            for name in ["a", "b", "c"] { #expect(try await chappie(["accounts", "add", name]).status == 0) }
            let accounts = JSONDocument(
                Data(try await runProcess(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", emulator.issuer + "/_emulator/accounts"]).stdout.utf8))
            let ids = (0..<3).compactMap { accounts.string($0, "account_id") }
            try await curl("/_emulator/accounts/\(ids[0])/usage", #"{"five_hour_used_percent":5,"weekly_used_percent":95}"#)
            try await curl("/_emulator/accounts/\(ids[1])/usage", #"{"five_hour_used_percent":50,"weekly_used_percent":20}"#)
            try await curl("/_emulator/accounts/\(ids[2])/usage", #"{"five_hour_used_percent":10,"weekly_used_percent":45}"#)

            let poll = try await chappie(["usage", "poll", "--all"])
            #expect(poll.status == 0, "\(poll.stderr)")
            #expect(poll.stdout.contains("a: 5-hour 5 %"))
            let show = JSONDocument(Data(try await chappie(["usage", "--json", "--cached"]).stdout.utf8))
            #expect(show.number(0, "usage", "weekly", "usedPercent") == 95)
            #expect(show.string(0, "usage", "bindingWindow") == "weekly")

            let list = try await chappie(["accounts", "list"])
            #expect(list.stdout.contains("5 %   95 %    5 % (weekly)"), "\(list.stdout)")
            let listJSON = JSONDocument(Data(try await chappie(["accounts", "list", "--json"]).stdout.utf8))
            #expect(listJSON.number(0, "usage", "headroom") == 5)

            let codexHome = home.appendingPathComponent("codex")
            let best = try await chappie(["accounts", "switch", "--best", "--codex-home", codexHome.path])
            #expect(best.status == 0, "\(best.stderr)")
            #expect(best.stdout.contains("Best: c has the most headroom"))
            #expect(FileManager.default.fileExists(atPath: codexHome.appendingPathComponent("auth.json").path))
            #expect(try await chappie(["accounts", "current"]).stdout == "c\n")
            #expect(try await chappie(["accounts", "set", "c", "--reserve", "40"]).status == 0)
            #expect(try await chappie(["accounts", "switch", "--best"]).stdout.contains("Best: b"))
            #expect(try await chappie(["accounts", "set", "c", "--reserve", "150"]).status == 2)
            #expect(try await chappie(["accounts", "switch", "--best", "c"]).status == 2)

            // Never into chappie's own directories (issue 26): a report goes elsewhere.
            #expect(try await chappie(["usage", "report", "--output", home.appendingPathComponent("report.csv").path]).status == 1)
            let reports = try TestTokens.temporaryDirectory("chappie-reports")
            defer { try? FileManager.default.removeItem(at: reports) }
            let file = reports.appendingPathComponent("report.csv")
            #expect(try await chappie(["usage", "report", "--by", "day", "--tz", "UTC", "--output", file.path]).status == 0)
            let csv = try String(contentsOf: file, encoding: .utf8)
            #expect(csv.hasPrefix("period_start,period_end,account,email,plan,samples,"))
            #expect(csv.components(separatedBy: "\r\n").filter { !$0.isEmpty }.count == 4)
            let piped = try await chappie(["usage", "report", "--by", "window"])
            #expect(piped.stdout.hasPrefix("account,email,window,resets_at"))
            #expect(try await chappie(["usage", "report", "--tz", "Mars/Olympus"]).status == 2)
            #expect(try await chappie(["usage", "report", "--since", "last tuesday"]).status == 2)
            let history = try await chappie(["usage", "history", "a", "--format", "json", "--since", "1d"])
            #expect(JSONDocument(Data(history.stdout.utf8)).array()?.isEmpty == false)
            // --chart: both windows, fitted to $COLUMNS (standard output is not a terminal here), ASCII under NO_COLOR.
            let chart = try await testbed.chappie(["usage", "history", "a", "--chart"], environment: ["COLUMNS": "50", "NO_COLOR": "1"])
            #expect(chart.status == 0, "\(chart.stderr)")
            #expect(chart.stdout.contains("a: 5-hour window") && chart.stdout.contains("a: weekly window"), "\(chart.stdout)")
            #expect(chart.stdout.split(separator: "\n").allSatisfy { $0.count <= 50 && $0.unicodeScalars.allSatisfy(\.isASCII) }, "\(chart.stdout)")
            #expect(chart.stdout.contains("#"), "a's weekly window is at 95 %: its bar fills the rows")
            #expect(try await chappie(["usage", "history", "a", "--chart", "--format", "csv"]).status == 2)
            // The HTML report: one self-contained file, a chart per account and window, never a token.
            let pages = try TestTokens.temporaryDirectory("chappie-pages")
            defer { try? FileManager.default.removeItem(at: pages) }
            let page = pages.appendingPathComponent("usage.html")
            let html = try await chappie(["usage", "report", "--format", "html", "--output", page.path])
            #expect(html.status == 0, "\(html.stderr)")
            let text = try String(contentsOf: page, encoding: .utf8)
            let charts = try ChartPage(text)
            #expect(charts.charts.map(\.key) == ["a/5h", "a/weekly", "b/5h", "b/weekly", "c/5h", "c/weekly"])
            // One point per stored reading of each window, as `usage history` lists them.
            for name in ["a", "b", "c"] {
                let rows = JSONDocument(Data(try await chappie(["usage", "history", name, "--format", "json"]).stdout.utf8))
                for (window, key) in [("5h", "fiveHour"), ("weekly", "weekly")] {
                    let readings = (0..<(rows.array()?.count ?? 0)).filter {
                        rows.string($0, "limitID") == "codex" && rows.number($0, key, "usedPercent") != nil
                    }.count
                    #expect(readings > 0, "\(name) \(window)")
                    #expect(charts.charts.first { $0.key == "\(name)/\(window)" }?.points == readings, "\(name) \(window): \(readings) readings")
                }
            }
            #expect(!charts.elements.contains("script") && !charts.elements.contains("img") && !charts.elements.contains("link"))
            let onlyA = pages.appendingPathComponent("usage-a.html")
            #expect(try await chappie(["usage", "report", "--format", "html", "--account", "a", "--output", onlyA.path]).status == 0)
            #expect(try ChartPage(String(contentsOf: onlyA, encoding: .utf8)).charts.map(\.key) == ["a/5h", "a/weekly"])
            // Bad input: --by with html, a directory that does not exist, a bad zone for the terminal chart.
            let grouped = try await chappie(["usage", "report", "--format", "html", "--by", "week"])
            #expect(grouped.status == 2 && grouped.stderr.contains("--by is for the tables"))
            let nowhere = try await chappie([
                "usage", "report", "--format", "html", "--output", testbed.home.appendingPathComponent("missing/usage.html").path,
            ])
            #expect(nowhere.status == 1 && nowhere.stderr.contains("does not exist") && nowhere.stdout.isEmpty, "\(nowhere.stderr)")
            #expect(try await chappie(["usage", "history", "a", "--chart", "--tz", "Mars/Olympus"]).status == 2)
            let token = try await chappie(["token", "a"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(!token.isEmpty && !text.contains(token))
            #expect(!text.contains("<script") && !text.contains("href=") && !text.contains("src="))
            let events = try await chappie(["log", "--all", "--json"])
            #expect(events.stdout.contains("usage_polled"))

            #expect(try await chappie(["config", "set", "usage-retention", "30d"]).status == 0)
            #expect(try await chappie(["config", "get", "usage-retention"]).stdout == "30d\n")
            let prune = try await chappie(["usage", "prune", "--older-than", "0s"])
            #expect(prune.status == 0)
            #expect(prune.stdout.contains("Deleted"))
            #expect(try await chappie(["usage", "report"]).stdout.components(separatedBy: "\r\n").filter { !$0.isEmpty }.count == 1)
        }
    }
}

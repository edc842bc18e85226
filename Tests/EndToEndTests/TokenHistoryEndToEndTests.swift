import ChappieTestSupport
import Foundation
import Testing

@Suite("Tokens per day: read from wham/profiles/me at most hourly, in the reports and the dashboard", .tags(.slow))
struct TokenHistoryEndToEndTests {
    /// The `done.tokens.totalTokens` of `chappie ask --json` as `name`.
    private func ask(_ testbed: ChappieTestbed, _ name: String, _ prompt: String) async throws -> Int {
        let reply = try await testbed.chappie(["ask", "--account", name, "--json", prompt])
        #expect(reply.status == 0, "\(reply.stderr)")
        let done = try #require(
            reply.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .first { $0["type"] as? String == "done" })
        return try #require((done["tokens"] as? [String: Any])?["totalTokens"] as? Int)
    }

    @Test(
        "Each account's tokens of today are exactly what its turns used; a second poll within the hour reads nothing; CSV, JSON and HTML carry them")
    func history() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["a", "b"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            // The UTC day the turns fall on (taken before them: a test that crosses midnight fails, never passes wrongly).
            let today = Date().formatted(Date.ISO8601FormatStyle().year().month().day())
            let a = try await ask(testbed, "a", "hello there") + (try await ask(testbed, "a", "and a longer second question"))
            let b = try await ask(testbed, "b", "hi")
            #expect(try await testbed.chappie(["usage", "poll", "--all"]).status == 0)
            func reads() async throws -> Int { try await testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/profiles/me") ?? 0 }
            #expect(try await reads() == 2)
            _ = try await ask(testbed, "a", "a third turn, after the read")
            #expect(try await testbed.chappie(["usage", "poll", "--all"]).status == 0)
            #expect(try await reads() == 2, "read at most hourly per account")

            let json = try await testbed.chappie(["usage", "report", "--tokens", "--tz", "UTC", "--json"])
            #expect(json.status == 0, "\(json.stderr)")
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
            let tokens = Dictionary(
                uniqueKeysWithValues: rows.filter { ($0["periodStart"] as? String)?.hasPrefix(today) == true }.map {
                    ($0["account"] as? String ?? "", $0["tokens"] as? Int)
                })
            #expect(tokens == ["a": a, "b": b], "\(rows)")

            let csv = try await testbed.chappie(["usage", "report", "--tokens", "--tz", "UTC", "--format", "csv"])
            #expect(
                csv.stdout.hasPrefix(
                    "period_start,period_end,account,email,plan,samples,five_hour_peak_percent,five_hour_mean_percent,weekly_peak_percent,weekly_mean_percent,limit_reached,resets_seen,tokens\r\n"
                ))
            #expect(csv.stdout.contains(",\(a)\r\n") && csv.stdout.contains(",\(b)\r\n"), "\(csv.stdout)")
            let page = try await testbed.chappie(["usage", "report", "--tokens", "--format", "html"])
            #expect(page.stdout.contains("<title>\(today): \(a) tokens</title>"), "\(page.stdout.suffix(800))")
            #expect(page.stdout.contains("Tokens per day (UTC)"))
            let refused = try await testbed.chappie(["usage", "report", "--tokens", "--by", "hour"])
            #expect(refused.status == 2 && refused.stderr.contains("--tokens adds a column to day and week rows"))

            // The daemon's polls read the history of an account not read within the hour.
            #expect(try await testbed.chappie(["accounts", "add", "c"]).status == 0)
            let c = try await ask(testbed, "c", "from c")
            let daemon = try testbed.startDaemon(["--poll-interval", "1s", "--metrics-listen", "127.0.0.1:0"])
            try await testbed.waitForSocket()
            for _ in 0..<300 {
                if try await reads() >= 3 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            // The dashboard: each account's last 14 days as bars, today's its tokens.
            let log = (try? String(contentsOf: testbed.home.appendingPathComponent("daemon.log"), encoding: .utf8)) ?? ""
            let address = try #require(
                log.split(separator: "\n").lazy.filter { $0.contains("serving /metrics") }.compactMap {
                    JSONDocument(Data($0.utf8)).string("address")
                }
                .first, "\(log)")
            let dashboard = try await runProcess(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "--max-time", "20", "http://\(address)/"]).stdout
            for (name, count) in [("a", a), ("b", b), ("c", c)] {
                let figure = try #require(
                    dashboard.components(separatedBy: "aria-label=\"\(name): tokens per day, last 14 days\"").dropFirst().first?
                        .components(separatedBy: "</svg>").first, "\(name): \(dashboard.suffix(2000))")
                #expect(figure.components(separatedBy: "<rect class=\"tokens\"").count - 1 == 14, "\(name)")
                #expect(figure.contains("<title>\(today): \(count) tokens</title>"), "\(name): \(figure)")
            }
            #expect(await testbed.stop(daemon) == 0)
            #expect(try await reads() == 3, "only c's history was due")
            let again = try await testbed.chappie(["usage", "report", "--tokens", "--tz", "UTC", "--json", "--account", "c"])
            #expect(again.stdout.contains("\"tokens\" : \(c)"), "\(again.stdout)")
        }
    }
}

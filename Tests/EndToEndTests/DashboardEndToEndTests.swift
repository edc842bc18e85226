import ChappieTestSupport
import Foundation
import Testing

@Suite("The dashboard the daemon serves tells the truth", .tags(.slow))
struct DashboardEndToEndTests {
    /// One account's section of the page.
    private static func section(_ name: String, in page: String) -> String {
        page.components(separatedBy: "<section class=\"account\" data-account=\"\(name)\"").dropFirst().first?.components(separatedBy: "</section>")
            .first ?? ""
    }

    /// The page's line about the daemon.
    private static func daemonLine(_ page: String) -> String {
        page.components(separatedBy: "<p class=\"daemon").dropFirst().first?.components(separatedBy: "</p>").first ?? ""
    }

    @Test("Reading ages, a window near its limit marked, then failing polls: each account's reason, and the warning that the daemon has not polled")
    func truth() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["full", "calm"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            let listed = JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8))
            let id = try #require((0..<2).first { listed.string($0, "name") == "full" }.flatMap { listed.string($0, "chatgptAccountID") })
            _ = try await testbed.control("/_emulator/accounts/\(id)/usage", method: "POST", body: #"{"five_hour_used_percent":90}"#)

            let daemon = try testbed.startDaemon(["--http", "127.0.0.1:0", "--poll-interval", "2s"])
            defer { kill(daemon.processIdentifier, SIGKILL) }
            try await testbed.waitForSocket()
            var address: String?
            while address == nil, daemon.isRunning {
                address = try await testbed.daemonStatus().string("daemon", "dashboard")
                if address == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            let dashboard = try #require(address, "\(testbed.log("daemon.log"))")
            func page() async throws -> String {
                try await runProcess(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "--max-time", "20", dashboard]).stdout
            }
            // The daemon polls at start: both accounts get a reading, and its age.
            var shown = try await page()
            while daemon.isRunning, !["full", "calm"].allSatisfy({ Self.section($0, in: shown).contains("Latest reading <span class=\"age\"") }) {
                try await Task.sleep(for: .milliseconds(200))
                shown = try await page()
            }
            #expect(
                Self.section("full", in: shown).contains(
                    "<div class=\"window binding high\">5-hour <span class=\"used\" data-field=\"5h\">90</span> % <strong class=\"mark\">near its limit</strong>"
                ), "\(shown)")
            #expect(!Self.section("calm", in: shown).contains("class=\"mark\""))
            #expect(Self.daemonLine(shown).contains("Last poll"), "\(Self.daemonLine(shown))")

            // Every poll fails from now on: each account shows why, and after twice the interval
            // without a poll the page says so.
            _ = try await testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind":"status","status":503,"count":100000,"path":"/backend-api/wham/usage"}"#)
            func truthful(_ page: String) -> Bool {
                ["full", "calm"].allSatisfy {
                    Self.section($0, in: page).contains("Last poll or refresh failed: usage poll failed: the usage endpoint answered HTTP 503")
                }
                    && Self.daemonLine(page).hasPrefix(" stale")
            }
            while daemon.isRunning, !truthful(shown) {
                try await Task.sleep(for: .milliseconds(250))
                shown = try await page()
            }
            #expect(truthful(shown), "\(shown)")
            #expect(Self.daemonLine(shown).contains("The daemon has not polled, and no reading came, for over twice its poll interval (2s)"))
            _ = try await testbed.control("/_emulator/faults", method: "DELETE")
            #expect(await testbed.stop(daemon) == 0)
        }
    }
}

import ChappieTestSupport
import Foundation
import GRDB
import Testing

/// Rows written into the store by hand, by a crafted backup or by whoever can write a team pool:
/// read as if they came from outside (issue 40, items 2 and 3).
@Suite("Hostile stored rows crash nothing and never pass for fresh", .tags(.slow))
struct HostileRowsEndToEndTests {
    /// A testbed with accounts a and b, each polled once.
    static func polled() async throws -> ChappieTestbed {
        let testbed = try await ChappieTestbed.start()
        for name in ["a", "b"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
        #expect(try await testbed.chappie(["usage", "poll", "--all"]).status == 0)
        return testbed
    }

    /// Runs SQL on the testbed's database, as a person with `sqlite3` would.
    static func edit(_ testbed: ChappieTestbed, _ sql: String) throws {
        let database = try DatabaseQueue(path: testbed.home.appendingPathComponent("chappie.sqlite").path)
        try database.write { try $0.execute(sql: sql) }
        try database.close()
    }

    @Test(
        "A reading whose reset time, window length or percentage is out of range crashes no reader, the auto-switching daemon included",
        arguments: ["9223372036854775807", "-9223372036854775808", "1e308", "'not a number'"])
    func outOfRangeNumbers(_ value: String) async throws {
        let testbed = try await Self.polled()
        try await whileRunning(testbed) {
            try Self.edit(
                testbed,
                "UPDATE usage_samples SET five_hour_resets_at = \(value), weekly_resets_at = \(value), five_hour_window_minutes = \(value) "
                    + "WHERE account_id = (SELECT id FROM accounts WHERE name = 'a')")
            for arguments in [
                ["guard", "a"], ["usage", "show"], ["usage"], ["accounts", "list"], ["accounts", "list", "--json"], ["usage", "history", "a"],
                ["usage", "report"], ["usage", "report", "--format", "json"], ["status"], ["prompt"], ["accounts", "show", "a"],
                ["accounts", "switch", "--best"],
            ] {
                let result = try await testbed.chappie(arguments)
                #expect(result.status <= 2, "\(arguments): \(result.status) \(result.stderr.prefix(300))")
            }
            let daemon = try testbed.startDaemon(["--poll-interval", "1s", "--auto-switch"])
            try await testbed.waitForSocket()
            // Alive through its first rounds, which read the row.
            var polls = 0
            while polls < 3 && daemon.isRunning {
                polls = try await testbed.daemonStatus().int("daemon", "polls") ?? 0
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(daemon.isRunning && polls >= 3, "\(testbed.log("daemon.log").suffix(800))")
            #expect(await testbed.stop(daemon) == 0)
        }
    }

    @Test("A reading dated in the future is stale: usage poll and guard --max-age 0s ask the service, and guard sees the account full")
    func futureReading() async throws {
        let testbed = try await Self.polled()
        try await whileRunning(testbed) {
            let a = try #require(try await testbed.control("/_emulator/accounts").string(0, "account_id"))
            _ = try await testbed.control("/_emulator/accounts/\(a)/usage", method: "POST", body: #"{"five_hour_used_percent":100}"#)
            // As a restored backup, a pool row or a clock that ran ahead leaves it: 0 % on 9999-12-31.
            try Self.edit(
                testbed,
                "UPDATE usage_samples SET observed_at = 253402300799, five_hour_used_percent = 0, weekly_used_percent = 0 "
                    + "WHERE account_id = (SELECT id FROM accounts WHERE name = 'a')")
            func polls() async throws -> Int { try await testbed.control("/_emulator/stats").int("requests", "/backend-api/wham/usage") ?? 0 }
            // The future reading is not fresh: a default guard (2 minutes) asks the service.
            let before = try await polls()
            let guarded = try await testbed.chappie(["guard", "a"])
            #expect(guarded.status == 75, "the service has a at 100 %: \(guarded.stderr)")
            #expect(try await polls() == before + 1, "the reading from the future was not taken as fresh")
            #expect(try await testbed.chappie(["guard", "a", "--max-age", "0s"]).status == 75)
            #expect(try await polls() == before + 2)
            #expect(try await testbed.chappie(["usage", "poll", "a"]).status == 0)
            #expect(try await polls() == before + 3)
            // The newest reading is the service's, in both binaries' lists.
            let listed = JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8))
            #expect(listed.int(0, "usage", "fiveHour", "usedPercent") == 100, "\(listed)")
            // A reading planted a few minutes ahead, within the tolerance for other machines' clocks,
            // hides none of the readings up to now: guard goes by the service's 100 %.
            try Self.edit(
                testbed,
                "INSERT INTO usage_samples (account_id, observed_at, source, plan, five_hour_used_percent, five_hour_window_minutes, "
                    + "five_hour_resets_at, weekly_used_percent, weekly_window_minutes, weekly_resets_at, limit_reached) "
                    + "SELECT id, unixepoch() + 240, 'poll', 'plus', 0, 300, unixepoch() + 7200, 0, 10080, unixepoch() + 86400, 0 FROM accounts WHERE name = 'a'"
            )
            #expect(try await testbed.chappie(["guard", "a"]).status == 75)
            #expect(try await testbed.chappie(["guard", "a", "--max-age", "1h"]).status == 75, "the poll before it is the newest")
            let table = try await testbed.chappie(["accounts", "list"]).stdout
            #expect(table.range(of: #"\ba +\S+ +Plus +ok +100 %"#, options: .regularExpression) != nil, "the 5-hour column: \(table)")
        }
    }
}

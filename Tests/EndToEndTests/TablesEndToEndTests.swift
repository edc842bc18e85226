import ChappieTestSupport
import Foundation
import Testing

@Suite("Tables fit the terminal and mark an account at its limit", .tags(.slow))
struct TablesEndToEndTests {
    /// Three accounts, one with a long name, one of them at its 5-hour limit, all polled.
    private func setUp() async throws -> ChappieTestbed {
        let testbed = try await ChappieTestbed.start()
        for name in ["work", "home", "personal.plus"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
        #expect(try await testbed.chappie(["exec", "home", "--", "true"]).status == 0)
        let listed = JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8))
        let home = try #require((listed.array() ?? []).compactMap { $0 as? [String: Any] }.first { $0["name"] as? String == "home" })
        let id = try #require(home["chatgptAccountID"] as? String)
        _ = try await testbed.control("/_emulator/accounts/\(id)/usage", method: "POST", body: #"{"five_hour_used_percent":100}"#)
        #expect(try await testbed.chappie(["usage", "poll", "--all"]).status == 0)
        return testbed
    }

    @Test("At COLUMNS=80, accounts list, usage, usage report and status fit 80 columns; the full account is marked (full) under NO_COLOR")
    func eightyColumns() async throws {
        let testbed = try await setUp()
        try await whileRunning(testbed) {
            let narrow: [String: String?] = ["COLUMNS": "80", "NO_COLOR": "1"]
            for command in [
                ["accounts", "list"], ["usage", "--cached"], ["status"], ["usage", "--cached", "--forecast"], ["usage", "report", "-o", "table"],
                ["usage", "report", "--by", "window", "-o", "table"],
            ] {
                let result = try await testbed.chappie(command, environment: narrow)
                #expect(result.status == 0, "\(command): \(result.stderr)")
                for line in result.stdout.split(separator: "\n") {
                    #expect(line.count <= 80, "\(command) is \(line.count) wide: \(line)")
                }
                #expect(result.stdout.contains("personal.plus"), "no name is cut: \(result.stdout)")
            }
            for command in [["accounts", "list"], ["usage", "--cached"]] {
                let lines = try await testbed.chappie(command, environment: narrow).stdout.split(separator: "\n")
                #expect(lines.first { $0.contains("home") }?.contains("(full)") == true, "\(lines)")
                #expect(lines.first { $0.contains("work") }?.contains("(full)") == false, "\(lines)")
            }
            // A $COLUMNS that is no width is ignored: whole lines, every account.
            for columns in ["0", "-5", "abc", ""] {
                let listed = try await testbed.chappie(["accounts", "list"], environment: ["COLUMNS": columns, "NO_COLOR": "1"])
                #expect(
                    listed.status == 0 && listed.stdout.contains("TOKEN EXPIRES") && listed.stdout.contains("personal.plus"), "COLUMNS=\(columns)")
            }
            // Wide enough, nothing is dropped: every column is there.
            let wide = try await testbed.chappie(["accounts", "list"], environment: ["COLUMNS": "250", "NO_COLOR": "1"])
            for header in ["EMAIL", "PLAN", "HEADROOM", "NEXT RESET", "TOKEN EXPIRES", "CODEX HOME"] {
                #expect(wide.stdout.contains(header), "\(header): \(wide.stdout)")
            }
        }
    }

    @Test("On a colour terminal the full account is red instead; NO_COLOR turns that into the mark")
    func colourOnATerminal() async throws {
        let testbed = try await setUp()
        try await whileRunning(testbed) {
            let command = ([try BuiltProducts.executable("chappie").path, "usage", "--cached"] + testbed.service).map { "'\($0)'" }.joined(
                separator: " ")
            let onTerminal = try await runProcess(
                URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"],
                environment: [
                    "TERM": "xterm", "NO_COLOR": nil, "COLUMNS": "200", "HOME": testbed.userHome.path, "CHAPPIE_PASSPHRASE": nil,
                    "CHAPPIE_KEY_FILE": nil,
                ])
            #expect(onTerminal.status == 0, "\(onTerminal.stderr)")
            // A terminal ends lines with CR LF, one Character in Swift.
            let lines = onTerminal.stdout.components(separatedBy: "\r\n")
            let home = try #require(lines.first { $0.contains("home") })
            #expect(home.contains("\u{1B}[31m100 %"), "\(home)")
            #expect(!home.contains("(full)"))
            #expect(lines.first { $0.contains("work") }?.contains("\u{1B}[") == false, "\(onTerminal.stdout.debugDescription)")
        }
    }
}

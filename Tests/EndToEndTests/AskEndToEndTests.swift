import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie ask, run as a user runs it", .tags(.slow))
struct AskEndToEndTests {
    @Test("A reply with no line break is ended as malformed at 16 MiB, not buffered whole, and not asked again")
    func endlessLine() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            _ = try await testbed.control("/_emulator/faults", method: "POST", body: #"{"kind": "endless_line", "bytes": 268435456}"#)
            // Run through a parent that reports its child's peak memory (KiB), and nothing else's.
            let peak =
                "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)"
            let asked = try await runProcess(
                URL(fileURLWithPath: "/usr/bin/python3"),
                ["-c", peak, try BuiltProducts.executable("chappie").path, "ask", "hello", "--transport", "sse"] + testbed.service,
                environment: ["HOME": testbed.userHome.path, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_ACCOUNT": nil],
                timeout: .seconds(120))
            #expect(asked.status == 1, "\(asked.stderr)")
            #expect(asked.stderr.contains("longer than 16 MiB"), "\(asked.stderr)")
            let kibibytes = try #require(Int(asked.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(kibibytes < 256 << 10, "the 256 MiB line was not held whole: peak \(kibibytes) KiB")
            #expect(try await testbed.control("/_emulator/stats").int("drips", "started") == 1, "asked once: a malformed stream is not retried")
        }
    }

    @Test("Streams the reply with a summary; a usage limit exits 75 naming the window; a revoked session exits 77")
    func ask() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let (emulator, home, chappie) = (testbed.emulator, testbed.home, { try await testbed.chappie($0) })
            // The first account stored is the active one: ask needs no switch first.
            let added = try await chappie(["accounts", "add", "work"])
            #expect(added.status == 0 && added.stdout.contains("work is now the active account, as none was"), "\(added.stdout)")
            let reply = try await chappie(["ask", "hello there", "--effort", "low"])
            #expect(reply.status == 0, "\(reply.stderr)")
            #expect(reply.stdout == "You said: hello there\n")
            // The summary names the account, the model, the tokens the reply used and the windows.
            #expect(
                reply.stderr.range(of: #"— work, gpt-5-codex, [1-9][0-9]* tokens: 5-hour 2 %"#, options: .regularExpression) != nil, "\(reply.stderr)"
            )
            #expect(try await chappie(["ask", "--effort", "extreme", "x"]).status == 2)

            // The transport: HTTP/SSE on request; a refused WebSocket falls back (said on stderr), or,
            // with --transport websocket, fails.
            let sse = try await chappie(["ask", "over sse", "--transport", "sse"])
            #expect(sse.status == 0, "\(sse.stderr)")
            #expect(sse.stdout == "You said: over sse\n")
            #expect(!sse.stderr.contains("instead of WebSocket"))
            let refuse = #"{"kind":"refuse_upgrade","status":404,"count":6}"#
            _ = try await runProcess(
                URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-X", "POST", "-d", refuse, "\(emulator.issuer)/_emulator/faults"])
            let fellBack = try await chappie(["ask", "fall back"])
            #expect(fellBack.status == 0, "\(fellBack.stderr)")
            #expect(fellBack.stdout == "You said: fall back\n")
            #expect(fellBack.stderr.contains("streamed over HTTP/SSE instead of WebSocket"))
            _ = try await runProcess(
                URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-X", "POST", "-d", refuse, "\(emulator.issuer)/_emulator/faults"])
            let strict = try await chappie(["ask", "strict", "--transport", "websocket"])
            #expect(strict.status != 0)
            #expect(strict.stderr.contains("404"), "\(strict.stderr)")

            let accountID =
                JSONDocument(Data(try await chappie(["accounts", "show", "work", "--json"]).stdout.utf8)).string("chatgptAccountID") ?? ""
            _ = try await runProcess(
                URL(fileURLWithPath: "/usr/bin/curl"),
                [
                    "-s", "-X", "POST", "-d", #"{"weekly_used_percent":100}"#, "\(emulator.issuer)/_emulator/accounts/\(accountID)/usage",
                ])
            let limited = try await chappie(["ask", "more"])
            #expect(limited.status == 75)
            #expect(limited.stderr.contains("weekly limit"))
            #expect(limited.stderr.contains("--best"))

            // Revoke the account's session at the issuer (as `codex logout` elsewhere would): the 401 that
            // follows refreshes, the refresh is refused, and ask exits 77.
            let codexHome = home.appendingPathComponent("codex")
            #expect(try await chappie(["accounts", "switch", "work", "--codex-home", codexHome.path]).status == 0)
            let refreshToken =
                JSONDocument(try Data(contentsOf: codexHome.appendingPathComponent("auth.json"))).string("tokens", "refresh_token") ?? ""
            _ = try await runProcess(
                URL(fileURLWithPath: "/usr/bin/curl"),
                [
                    "-s", "-X", "POST", "-H", "Content-Type: application/json",
                    "-d", #"{"token":"\#(refreshToken)","token_type_hint":"refresh_token"}"#, "\(emulator.issuer)/oauth/revoke",
                ])
            let dead = try await chappie(["ask", "still there?"])
            #expect(dead.status == 77, "\(dead.stderr)")
            #expect(dead.stderr.contains("signed in again"))
        }
    }
}

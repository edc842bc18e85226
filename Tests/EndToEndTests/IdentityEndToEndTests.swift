import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie names itself: its originator and User-Agent, the originator and ca-file settings, an edge's HTML 403 explained", .tags(.slow))
struct IdentityEndToEndTests {
    @Test("Usage polls and turns over wss and SSE say originator: chappie and a chappie User-Agent; the originator setting changes it")
    func originator() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            #expect(try await testbed.chappie(["usage", "poll", "work"]).status == 0)
            #expect(try await testbed.chappie(["ask", "--transport", "websocket", "hello"]).status == 0)
            #expect(try await testbed.chappie(["ask", "--transport", "sse", "hello"]).status == 0)
            var stats = try await testbed.control("/_emulator/stats")
            // A poll and the token history it reads; and for each ask, the workspace discovery and the
            // turn (an upgrade, a POST).
            #expect(stats.int("originators", "chappie") == 6)
            #expect(stats.int("originators", "codex_cli_rs") == nil)
            #expect((stats.int("user_agents", "chappie/0.1.0") ?? 0) >= 5)
            #expect(stats.int("user_agents", "codex_cli_rs") == nil)

            let refused = try await testbed.chappie(["config", "set", "originator", "not valid!"])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("originator"))
            #expect(try await testbed.chappie(["config", "set", "originator", "my-harness"]).status == 0)
            #expect(try await testbed.chappie(["config", "get", "originator"]).stdout == "my-harness\n")
            #expect(try await testbed.chappie(["usage", "poll", "work"]).status == 0)
            stats = try await testbed.control("/_emulator/stats")
            // The token history is read at most hourly: these polls are one request each.
            #expect(stats.int("originators", "my-harness") == 1)
            #expect(try await testbed.chappie(["config", "unset", "originator"]).status == 0)
            #expect(try await testbed.chappie(["usage", "poll", "work"]).status == 0)
            #expect(try await testbed.control("/_emulator/stats").int("originators", "chappie") == 7)
        }
    }

    @Test("An HTML 403 from the edge is explained: a proxy or the service refused, and the originator setting is the way to change chappie's")
    func edgeRefusal() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            let page = "<!DOCTYPE html><html><head><title>Attention Required</title></head><body>Sorry, you have been blocked</body></html>"
            let fault = try JSONSerialization.data(withJSONObject: [
                "kind": "status", "status": 403, "path": "/backend-api/", "count": 3, "body": page,
            ])
            _ = try await testbed.control("/_emulator/faults", method: "POST", body: String(decoding: fault, as: UTF8.self))
            let poll = try await testbed.chappie(["usage", "poll", "work"])
            #expect(poll.status == 75, "\(poll.stderr)")
            #expect(poll.stderr.contains("a web page came back"), "\(poll.stderr)")
            #expect(poll.stderr.contains("chappie config set originator NAME"))
            #expect(!poll.stderr.contains("Attention Required"), "the page itself is not shown")
            // The ask's discovery gets the page too (and keeps the configured origin), then its turn.
            let ask = try await testbed.chappie(["ask", "--transport", "sse", "hello"])
            #expect(ask.status == 69, "\(ask.stderr)")
            #expect(ask.stderr.contains("chappie config set originator NAME"), "\(ask.stderr)")
        }
    }

    @Test("The ca-file setting is trusted by every command of the store, and is checked when set")
    func caFileSetting() async throws {
        let testbed = try await ChappieTestbed.start(emulatorArguments: ["--tls"] + ChappieTestbed.autoApproving)
        try await whileRunning(testbed) {
            let authority = try #require(testbed.emulator.authorityFile).path
            #expect(try await testbed.chappie(["accounts", "add", "work", "--ca-file", authority]).status == 0)
            #expect(try await testbed.chappie(["refresh", "work"]).status == 69)
            let notPEM = try await testbed.chappie(["config", "set", "ca-file", "/etc/hostname"])
            #expect(notPEM.status != 0)
            #expect(notPEM.stderr.contains("holds no PEM certificate"), "\(notPEM.stderr)")
            #expect(try await testbed.chappie(["config", "set", "ca-file", authority]).status == 0)
            let refreshed = try await testbed.chappie(["refresh", "work"])
            #expect(refreshed.status == 0, "\(refreshed.stderr)")
            #expect(try await testbed.chappie(["ask", "--transport", "websocket", "hi"]).status == 0)
            // This machine's setting, kept beside the alert targets, not in the store.
            let local = try JSONSerialization.jsonObject(with: Data(contentsOf: testbed.home.appendingPathComponent("local-settings.json")))
            #expect((local as? [String: Any])?["ca-file"] as? String == authority, "\(local)")
            #expect(try await testbed.chappie(["config", "get", "ca-file"]).stdout == authority + "\n")
        }
    }

    @Test("A certificate file another user can change, or one in a directory they can write, is refused when set and when used (78)")
    func caFileOthersCanWrite() async throws {
        let testbed = try await ChappieTestbed.start(emulatorArguments: ["--tls"] + ChappieTestbed.autoApproving)
        try await whileRunning(testbed) {
            let authority = try #require(testbed.emulator.authorityFile)
            #expect(try await testbed.chappie(["accounts", "add", "work", "--ca-file", authority.path]).status == 0)
            let open = try TestTokens.temporaryDirectory("chappie-open-ca")
            defer { try? FileManager.default.removeItem(at: open) }
            let writable = open.appendingPathComponent("writable.pem")
            try FileManager.default.copyItem(at: authority, to: writable)
            #expect(chmod(writable.path, 0o666) == 0)
            let inOpenDirectory = open.appendingPathComponent("sub/ca.pem")
            try FileManager.default.createDirectory(at: inOpenDirectory.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: authority, to: inOpenDirectory)
            #expect(chmod(inOpenDirectory.deletingLastPathComponent().path, 0o777) == 0)
            for (file, place) in [(writable.path, writable.path), (inOpenDirectory.path, inOpenDirectory.deletingLastPathComponent().path)] {
                let set = try await testbed.chappie(["config", "set", "ca-file", file])
                #expect(set.status == 78, "\(file): \(set.stderr)")
                #expect(set.stderr.contains("\(place) can be written by every user") && set.stderr.contains("chmod go-w \(place)"), "\(set.stderr)")
                let used = try await testbed.chappie(["refresh", "work", "--ca-file", file])
                #expect(used.status == 78, "\(file): \(used.stderr)")
                #expect(used.stderr.contains("\(place) can be written by every user"), "\(used.stderr)")
            }
            #expect(try await testbed.chappie(["config", "get", "ca-file"]).stdout == "\n")
            #expect(try await testbed.chappie(["refresh", "work", "--ca-file", authority.path]).status == 0)
        }
    }
}

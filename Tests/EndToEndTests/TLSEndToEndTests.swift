import ChappieCore
import ChappieEmulator
import ChappieNet
import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie over TLS: the emulator's certificates, the trust a user gives, and certificates refused", .tags(.slow))
struct TLSEndToEndTests {
    /// A PEM file with a certificate authority of its own, which signed nothing chappie meets.
    private func strangerAuthority() throws -> URL {
        let file = try TestTokens.temporaryDirectory("chappie-stranger-ca").appendingPathComponent("ca.pem")
        try Data(try EmulatorTLS.generate().authorityPEM.utf8).write(to: file)
        return file
    }

    @Test("With the emulator's authority in SSL_CERT_FILE, --ca-file or CHAPPIE_CA_FILE: sign-in, refresh, a usage poll, ask over wss and over SSE")
    func trusted() async throws {
        let testbed = try await ChappieTestbed.start(emulatorArguments: ["--tls"] + ChappieTestbed.autoApproving)
        try await whileRunning(testbed) {
            let authority = try #require(testbed.emulator.authorityFile).path
            #expect(testbed.emulator.issuer.hasPrefix("https://127.0.0.1:"))
            let added = try await testbed.chappie(["accounts", "add", "work"], environment: ["SSL_CERT_FILE": authority])
            #expect(added.status == 0, "\(added.stderr)")
            let refreshed = try await testbed.chappie(["refresh", "work", "--ca-file", authority])
            #expect(refreshed.status == 0, "\(refreshed.stderr)")
            let polled = try await testbed.chappie(["usage", "poll", "work"], environment: ["CHAPPIE_CA_FILE": authority])
            #expect(polled.status == 0, "\(polled.stderr)")
            let turns = try await testbed.control("/_emulator/stats").int("websocket", "turns") ?? 0
            let overWebSocket = try await testbed.chappie(["ask", "--transport", "websocket", "hello", "--ca-file", authority])
            #expect(overWebSocket.status == 0, "\(overWebSocket.stderr)")
            #expect(overWebSocket.stdout.contains("You said: hello"))
            #expect(try await testbed.control("/_emulator/stats").int("websocket", "turns") ?? 0 > turns, "the turn went over wss")
            let overSSE = try await testbed.chappie(["ask", "--transport", "sse", "again", "--ca-file", authority])
            #expect(overSSE.status == 0, "\(overSSE.stderr)")
            #expect(overSSE.stdout.contains("You said: again"))
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("refresh", "redemptions") == 1)
            #expect(stats.int("refresh", "reuse_detected") == 0)
        }
    }

    @Test(
        "A region-pinned account: ask asks where its workspace is and sends its turns there with the routing header; without an answer, to the configured origin"
    )
    func pinnedWorkspace() async throws {
        let testbed = try await ChappieTestbed.start(emulatorArguments: ["--tls"] + ChappieTestbed.autoApproving)
        try await whileRunning(testbed) {
            let authority = try #require(testbed.emulator.authorityFile).path
            #expect(try await testbed.chappie(["accounts", "add", "work", "--ca-file", authority]).status == 0)
            let id = try #require(
                JSONDocument(Data(try await testbed.chappie(["accounts", "show", "work", "--json"]).stdout.utf8)).string("chatgptAccountID"))
            let pinned = try await testbed.control("/_emulator/accounts/\(id)/routing", method: "POST", body: #"{"override":"us_cr"}"#)
            let regional = try #require(pinned.string("workspace_origin"))
            for transport in ["websocket", "sse"] {
                let asked = try await testbed.chappie(["ask", "--transport", transport, "hello", "--ca-file", authority])
                #expect(asked.status == 0, "\(transport): \(asked.stderr)")
                #expect(asked.stdout.contains("You said: hello"))
            }
            var stats = try await testbed.control("/_emulator/stats")
            #expect(stats.string("routing", "regional_origin") == regional)
            #expect(stats.int("routing", "regional_requests", "/backend-api/codex/responses") == 2, "both turns went to the pinned region")
            #expect(stats.int("routing", "override_headers", "us_cr") == 2)
            // Discovery failing: the turn goes to the configured origin, without the header.
            _ = try await testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind":"status","status":503,"path":"/backend-api/wham/accounts/check","count":5}"#)
            let fallback = try await testbed.chappie(["ask", "--transport", "sse", "again", "--ca-file", authority])
            #expect(fallback.status == 0, "\(fallback.stderr)")
            stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("routing", "regional_requests", "/backend-api/codex/responses") == 2)
            #expect(stats.int("routing", "override_headers", "us_cr") == 2)
        }
    }

    @Test("Without the authority, or with another one: exit 69 naming the host and what to trust; the account keeps working")
    func untrusted() async throws {
        let testbed = try await ChappieTestbed.start(emulatorArguments: ["--tls"] + ChappieTestbed.autoApproving)
        try await whileRunning(testbed) {
            let authority = try #require(testbed.emulator.authorityFile).path
            #expect(try await testbed.chappie(["accounts", "add", "work"], environment: ["SSL_CERT_FILE": authority]).status == 0)
            let stranger = try strangerAuthority().path
            for (what, environment, arguments) in [
                ("the system's authorities", [String: String?](), [String]()),
                ("another authority in SSL_CERT_FILE", ["SSL_CERT_FILE": stranger], []),
                ("another authority with --ca-file", [:], ["--ca-file", stranger]),
            ] {
                let refused = try await testbed.chappie(["refresh", "work"] + arguments, environment: environment)
                #expect(refused.status == 69, "\(what): \(refused.stderr)")
                #expect(refused.stdout.contains("127.0.0.1") || refused.stderr.contains("127.0.0.1"), "\(what)")
                #expect((refused.stdout + refused.stderr).contains("--ca-file"), "\(what)")
                #expect(!(refused.stdout + refused.stderr).contains("Try again later"), "\(what)")
                let asked = try await testbed.chappie(["ask", "--transport", "websocket", "hello"] + arguments, environment: environment)
                #expect(asked.status == 69, "\(what): \(asked.stderr)")
                #expect(asked.stderr.contains("--ca-file"), "\(what)")
                #expect(!asked.stderr.contains(".c:"), "no BoringSSL source paths: \(asked.stderr)")
                let polled = try await testbed.chappie(["usage", "poll", "work"] + arguments, environment: environment)
                #expect(polled.status == 69, "\(what): \(polled.stderr)")
            }
            // A file that is not a usable list of authorities is the configuration's fault (78), never an empty trust.
            let fifo = testbed.home.appendingPathComponent("fifo.pem").path
            #expect(mkfifo(fifo, 0o600) == 0)
            for (file, reason) in [
                ("/nonexistent/ca.pem", "cannot be read"), (fifo, "cannot be read"), ("/etc/hostname", "holds no PEM certificate"),
            ] {
                let unusable = try await testbed.chappie(["refresh", "work", "--ca-file", file])
                #expect(unusable.status == 78, "\(file): \(unusable.stderr)")
                #expect((unusable.stdout + unusable.stderr).contains("\(file) \(reason)"), "\(unusable.stdout + unusable.stderr)")
            }
            let fifoRoots = try await testbed.chappie(["ask", "--transport", "sse", "hello"], environment: ["SSL_CERT_FILE": fifo])
            #expect(fifoRoots.status == 78, "\(fifoRoots.stderr)")
            // Nothing was redeemed or lost: the account refreshes once trusted.
            #expect(try await testbed.control("/_emulator/stats").int("refresh", "redemptions") == 0)
            #expect(try await testbed.chappie(["refresh", "work", "--ca-file", authority]).status == 0)
            let list = JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8))
            #expect(list.string(0, "status") == "ok")
        }
    }

    @Test(
        "An expired certificate, or one for another host, is refused even with its authority trusted: by libcurl and for wss",
        arguments: ["expired", "another host"])
    func badCertificate(_ kind: String) async throws {
        let tls =
            kind == "expired" ? try EmulatorTLS.generate(lifetime: -86400) : try EmulatorTLS.generate(names: ["elsewhere.example"], loopback: false)
        try await withEmulator(EmulatorConfiguration(autoApprove: true, autoApproveDelay: .zero, tls: tls)) { emulator in
            let authority = try #require(emulator.authorityFile).path
            let home = try TestTokens.temporaryDirectory("chappie-tls")
            let runner = ChappieRunner(home: home)
            let added = try await runner(
                ["accounts", "add", "work", "--issuer", emulator.baseURL.absoluteString, "--backend", emulator.backendURL.absoluteString],
                environment: ["SSL_CERT_FILE": authority])
            #expect(added.status == 69, "\(added.stderr)")
            #expect(added.stderr.contains("the certificate of 127.0.0.1"), "\(added.stderr)")
            var url = URLComponents(url: emulator.backendURL.appendingPathComponent("codex/responses"), resolvingAgainstBaseURL: false)!
            url.scheme = "wss"
            let client = ChappieWebSocketClient(
                configuration: ChappieWebSocketClientConfiguration(trust: ChappieTLSTrust(additionalFiles: [authority])))
            await #expect {
                try await client.connect(url: url.url!, headers: ["Authorization": "Bearer x"]) { _ in }
            } throws: { error in
                (error as? ChappieHTTPClientError)?.code == .certificateRejected
            }
        }
    }
}

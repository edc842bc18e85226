import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie accounts add --browser, with a browser that follows the redirect", .tags(.slow))
struct BrowserSignInEndToEndTests {
    /// A `$BROWSER` that first sends the listener a callback with a forged `state` (recording the
    /// status it got), then follows the authorize URL and its redirect as a browser would.
    static func browser(in directory: URL) throws -> URL {
        let script = directory.appendingPathComponent("browser.sh")
        try Data(
            #"""
            #!/bin/sh
            port=$(printf '%s' "$1" | sed -n 's|^http://localhost:\([0-9]*\)/start/.*|\1|p')
            curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/auth/callback?code=forged&state=wrong" > "$(dirname "$0")/forged"
            curl -s -L -c "$(dirname "$0")/cookies" -b "$(dirname "$0")/cookies" -o "$(dirname "$0")/page" "$1"
            """#.utf8
        ).write(to: script)
        chmod(script.path, 0o755)
        return script
    }

    @Test("the browser flow signs an account in: PKCE, state checked (a forged callback is refused), code exchanged, listener closed")
    func signsIn() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let directory = try TestTokens.temporaryDirectory("browser")
            defer { try? FileManager.default.removeItem(at: directory) }
            let environment: [String: String?] = ["BROWSER": try Self.browser(in: directory).path, "DISPLAY": nil, "WAYLAND_DISPLAY": nil]

            let added = try await testbed.chappie(
                ["accounts", "add", "work", "--browser", "--callback-port", "0", "--json"], environment: environment)
            #expect(added.status == 0, "\(added.stderr)")
            let account = JSONDocument(Data(added.stdout.utf8))
            #expect(account.string("name") == "work", "standard output is one JSON document")
            #expect(account.string("email")?.hasSuffix("@example.com") == true)
            #expect(added.stderr.contains("/start/"), "the browser is given the one-time start URL")
            #expect(!added.stderr.contains("code_challenge"), "the authorize URL is never on a command line or the terminal")
            #expect(try String(contentsOf: directory.appendingPathComponent("forged"), encoding: .utf8) == "400")
            #expect(try String(contentsOf: directory.appendingPathComponent("page"), encoding: .utf8).contains("You can close this tab"))
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("device_codes", "browser_authorizations") == 1)
            #expect(stats.int("device_codes", "issued") == 0, "no device code was asked for")

            // The account works: a token comes out of the store.
            #expect(try await testbed.chappie(["token", "work"]).status == 0)
        }
    }

    @Test("a refusal in the browser is reported and stores nothing; a device-code 404 suggests --browser")
    func refusedAndSuggested() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let directory = try TestTokens.temporaryDirectory("browser")
            defer { try? FileManager.default.removeItem(at: directory) }
            let environment: [String: String?] = ["BROWSER": try Self.browser(in: directory).path, "DISPLAY": nil, "WAYLAND_DISPLAY": nil]

            _ = try await testbed.control(
                "/_emulator/authorize/deny", method: "POST", body: #"{"error":"access_denied","error_description":"missing_codex_entitlement"}"#)
            let refused = try await testbed.chappie(["accounts", "add", "--browser", "--callback-port", "0"], environment: environment)
            #expect(refused.status == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains("Codex is not enabled for this workspace"))
            #expect(JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8)).array()?.isEmpty == true)

            _ = try await testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind":"status","status":404,"path":"/api/accounts/deviceauth/usercode"}"#)
            let disabled = try await testbed.chappie(["accounts", "add"], environment: environment)
            #expect(disabled.status != 0)
            #expect(disabled.stderr.contains("chappie accounts add --browser"), "\(disabled.stderr)")

            let misused = try await testbed.chappie(["accounts", "add", "--callback-port", "0"], environment: environment)
            #expect(misused.status == 2)
        }
    }
}

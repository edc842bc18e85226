import CSodium
import ChappieEmulator
import ChappieNet
import ChappieTestSupport
import Foundation
import Testing

@Suite("Emulator: device-code sign-in (docs/protocol.md §1)")
struct DeviceCodeTests {
    private let start = #"{"client_id":"app_EMoamEEZ73f0CkXaXp7hrann"}"#

    @Test("usercode answers with an id, a code, a string interval and an expiry 15 minutes out")
    func userCode() async throws {
        try await withEmulator { emulator in
            let requested = Date()
            let (status, json) = try await emulator.json(emulator.request("/api/accounts/deviceauth/usercode", method: .post, json: start))
            #expect(status == 200)
            #expect(json.string("device_auth_id")?.hasPrefix("deviceauth_") == true)
            let code = try #require(json.string("user_code"))
            #expect(code.wholeMatch(of: /[A-Z]{4}-[A-Z0-9]{5}/) != nil)
            #expect(json.string("interval") == "5")
            // 15 minutes from when the emulator answered: between the request and now (no upper bound on the wait).
            let expires = try #require(json.string("expires_at").flatMap { try? Date($0, strategy: .iso8601) })
            #expect(expires.timeIntervalSince(requested) >= 899)
            #expect(expires.timeIntervalSinceNow <= 901)
            #expect(shapeDifferences(json.root, JSONDocument(try Fixtures.data("device-usercode.json")).root).isEmpty)
        }
    }

    @Test("usercode refuses an unknown client id and a body that is not JSON")
    func userCodeRefusals() async throws {
        try await withEmulator { emulator in
            let wrong = try await emulator.json(
                emulator.request(
                    "/api/accounts/deviceauth/usercode", method: .post, json: #"{"client_id":"someone-else"}"#))
            #expect(wrong.status == 400)
            #expect(wrong.json.string("error", "code") == "invalid_client")
            let garbage = try await emulator.json(emulator.request("/api/accounts/deviceauth/usercode", method: .post, json: "{nope"))
            #expect(garbage.status == 400)
        }
    }

    @Test("Polling is 403 pending (the real body) until approved, then 200 with code and verifier")
    func pollUntilApproved() async throws {
        try await withEmulator { emulator in
            let started = try await emulator.json(emulator.request("/api/accounts/deviceauth/usercode", method: .post, json: start)).json
            let poll = RunningEmulator.encode([
                "device_auth_id": try #require(started.string("device_auth_id")), "user_code": try #require(started.string("user_code")),
            ])
            let pending = try await emulator.json(emulator.request("/api/accounts/deviceauth/token", method: .post, json: poll))
            #expect(pending.status == 403)
            #expect(shapeDifferences(pending.json.root, JSONDocument(try Fixtures.data("device-token-pending-403.json")).root).isEmpty)
            #expect(pending.json.string("error", "code") == "deviceauth_authorization_pending")

            let approval = try await emulator.json(
                emulator.request(
                    "/_emulator/device/approve", method: .post,
                    json: RunningEmulator.encode(["user_code": try #require(started.string("user_code")), "email": "ada@example.com", "plan": "pro"]))
            )
            #expect(approval.status == 200)
            #expect(approval.json.string("email") == "ada@example.com")

            let done = try await emulator.json(emulator.request("/api/accounts/deviceauth/token", method: .post, json: poll))
            #expect(done.status == 200)
            #expect(shapeDifferences(done.json.root, JSONDocument(try Fixtures.data("device-token-success.json")).root).isEmpty)
            // The challenge is S256 of the verifier, as PKCE defines it.
            let verifier = try #require(done.json.string("code_verifier"))
            #expect(done.json.string("code_challenge") == s256(verifier))
        }
    }

    @Test("A poll with a wrong user code or unknown id is 404 deviceauth_not_found, not pending")
    func pollUnknown() async throws {
        try await withEmulator { emulator in
            let started = try await emulator.json(emulator.request("/api/accounts/deviceauth/usercode", method: .post, json: start)).json
            let wrongCode = RunningEmulator.encode(["device_auth_id": try #require(started.string("device_auth_id")), "user_code": "ZZZZ-99999"])
            let unknownID = RunningEmulator.encode(["device_auth_id": "deviceauth_nope", "user_code": "ZZZZ-99999"])
            for poll in [wrongCode, unknownID] {
                let answer = try await emulator.json(emulator.request("/api/accounts/deviceauth/token", method: .post, json: poll))
                #expect(answer.status == 404)
                #expect(answer.json.string("error", "code") == "deviceauth_not_found")
            }
        }
    }

    @Test("A device code expires: polling answers 403 deviceauth_user_code_expired and approving fails; an unknown id is 404 deviceauth_not_found")
    func expiry() async throws {
        var configuration = EmulatorConfiguration()
        configuration.deviceCodeLifetime = .milliseconds(500)
        try await withEmulator(configuration) { emulator in
            let started = try await emulator.json(emulator.request("/api/accounts/deviceauth/usercode", method: .post, json: start)).json
            let userCode = try #require(started.string("user_code"))
            let poll = RunningEmulator.encode(["device_auth_id": try #require(started.string("device_auth_id")), "user_code": userCode])
            try await Task.sleep(for: .milliseconds(700))
            let expired = try await emulator.json(emulator.request("/api/accounts/deviceauth/token", method: .post, json: poll))
            #expect(expired.status == 403)
            #expect(expired.json.string("error", "code") == "deviceauth_user_code_expired")
            let unknown = try await emulator.json(
                emulator.request(
                    "/api/accounts/deviceauth/token", method: .post,
                    json: RunningEmulator.encode(["device_auth_id": "deviceauth_unknown", "user_code": userCode])))
            #expect(unknown.status == 404)
            #expect(unknown.json.string("error", "code") == "deviceauth_not_found")
            let withoutCode = try await emulator.json(
                emulator.request(
                    "/api/accounts/deviceauth/token", method: .post,
                    json: RunningEmulator.encode(["device_auth_id": try #require(started.string("device_auth_id"))])))
            #expect(withoutCode.status == 400)
            let approval = try await emulator.json(
                emulator.request(
                    "/_emulator/device/approve", method: .post, json: RunningEmulator.encode(["user_code": userCode])))
            #expect(approval.status == 410)
        }
    }

    @Test("--auto-approve approves each code after the delay, each as a new account")
    func autoApprove() async throws {
        var configuration = EmulatorConfiguration()
        configuration.autoApprove = true
        configuration.autoApproveDelay = .milliseconds(1500)
        try await withEmulator(configuration) { emulator in
            var emails: [String] = []
            let clock = ContinuousClock()
            for _ in 0..<2 {
                let issued = clock.now
                let started = try await emulator.json(emulator.request("/api/accounts/deviceauth/usercode", method: .post, json: start)).json
                let poll = RunningEmulator.encode([
                    "device_auth_id": try #require(started.string("device_auth_id")), "user_code": try #require(started.string("user_code")),
                ])
                // Pending until the delay has passed, then approved: polled for at most 30 s, and only a
                // lower bound on the time is checked, so a loaded machine does not fail the test.
                var done = try await emulator.json(emulator.request("/api/accounts/deviceauth/token", method: .post, json: poll))
                for _ in 0..<150 where done.status == 403 {
                    try await Task.sleep(for: .milliseconds(200))
                    done = try await emulator.json(emulator.request("/api/accounts/deviceauth/token", method: .post, json: poll))
                }
                #expect(done.status == 200)
                #expect(clock.now - issued >= .milliseconds(1500), "approved before the delay")
                let form = [
                    "grant_type=authorization_code", "client_id=\(codexClientID)",
                    "code=" + RunningEmulator.formEncode(try #require(done.json.string("authorization_code"))),
                    "code_verifier=" + RunningEmulator.formEncode(try #require(done.json.string("code_verifier"))),
                    "redirect_uri=" + RunningEmulator.formEncode("http://127.0.0.1:\(emulator.port)/deviceauth/callback"),
                ].joined(separator: "&")
                let tokens = try await emulator.json(emulator.request("/oauth/token", method: .post, form: form)).json
                let idToken = try #require(tokens.string("id_token"))
                emails.append(try #require(jwtClaims(idToken).string("email")))
            }
            #expect(emails.count == 2)
            #expect(Set(emails).count == 2)
            let accounts = try await emulator.json(emulator.request("/_emulator/accounts")).json
            #expect(accounts.array()?.count == 2)
        }
    }
}

/// base64url(SHA-256(text)): the PKCE S256 challenge, computed here with libsodium directly.
func s256(_ text: String) -> String {
    var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
    let input = Array(text.utf8)
    crypto_hash_sha256(&digest, input, UInt64(input.count))
    return Data(digest).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

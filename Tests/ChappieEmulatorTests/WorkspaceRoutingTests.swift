import ChappieEmulator
import ChappieNet
import ChappieTestSupport
import Foundation
import Testing

@Suite("Emulator: workspace routing discovery (wham/accounts/check), the second TLS listener, and the token history (wham/profiles/me)")
struct WorkspaceRoutingTests {
    private func headers(_ tokens: IssuedTokens) throws -> ChappieHTTPHeaders {
        let account = try #require(jwtClaims(tokens.accessToken).string("https://api.openai.com/auth", "chatgpt_account_id"))
        return ["Authorization": "Bearer \(tokens.accessToken)", "ChatGPT-Account-Id": account, "originator": "chappie-test"]
    }

    private func tls() throws -> EmulatorConfiguration {
        EmulatorConfiguration(tls: try EmulatorTLS.generate())
    }

    @Test("The check answers the token's account with the emulator's own https origin and NO_CONSTRAINT; a bad or expired token is 401")
    func accountCheck() async throws {
        try await withEmulator(try tls()) { emulator in
            let tokens = try await emulator.signIn()
            let headers = try headers(tokens)
            let check = try await emulator.json(emulator.request("/backend-api/wham/accounts/check", headers: headers))
            #expect(check.status == 200)
            let id = try #require(headers["ChatGPT-Account-Id"])
            #expect(check.json.array("accounts")?.count == 1)
            #expect(check.json.string("accounts", 0, "id") == id)
            #expect(check.json.string("accounts", 0, "workspace_backend_origin") == emulator.baseURL.absoluteString)
            #expect(check.json.string("accounts", 0, "account_routing_override") == "NO_CONSTRAINT")
            #expect(check.json.string("account_ordering", 0) == id)
            #expect(check.json.string("default_account_id") == id)
            var forged = headers
            forged["Authorization"] = "Bearer not-a-token"
            #expect(try await emulator.json(emulator.request("/backend-api/wham/accounts/check", headers: forged)).status == 401)
        }
        // Expired: 1-second tokens; wait for the state, not for a time.
        var short = try tls()
        short.accessTokenLifetime = .seconds(1)
        try await withEmulator(short) { emulator in
            let headers = try headers(try await emulator.signIn())
            var expired = try await emulator.json(emulator.request("/backend-api/wham/accounts/check", headers: headers))
            while expired.status == 200 {
                try await Task.sleep(for: .milliseconds(200))
                expired = try await emulator.json(emulator.request("/backend-api/wham/accounts/check", headers: headers))
            }
            #expect(expired.status == 401)
            #expect(expired.json.string("error", "code") == "token_expired")
        }
    }

    @Test("An account pinned to a region is sent to the second listener; Responses requests there carry the routing header")
    func pinnedRegion() async throws {
        try await withEmulator(try tls()) { emulator in
            let tokens = try await emulator.signIn()
            let headers = try headers(tokens)
            let id = try #require(headers["ChatGPT-Account-Id"])
            let bad = try await emulator.json(emulator.request("/_emulator/accounts/\(id)/routing", method: .post, json: #"{"override":"eu"}"#))
            #expect(bad.status == 400)
            let pinned = try await emulator.json(emulator.request("/_emulator/accounts/\(id)/routing", method: .post, json: #"{"override":"us"}"#))
            #expect(pinned.status == 200)
            let check = try await emulator.json(emulator.request("/backend-api/wham/accounts/check", headers: headers)).json
            #expect(check.string("accounts", 0, "account_routing_override") == "us")
            let origin = try #require(check.string("accounts", 0, "workspace_backend_origin"))
            #expect(origin.hasPrefix("https://127.0.0.1:") && origin != emulator.baseURL.absoluteString)
            var routed = headers
            routed["x-openai-account-routing-override"] = "us"
            routed["Accept"] = "text/event-stream"
            let body =
                #"{"model":"gpt-5-codex","stream":true,"store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}"#
            var request = ChappieHTTPRequest(url: URL(string: origin + "/backend-api/codex/responses")!, method: .post, headers: routed)
            request.headers["Content-Type"] = "application/json"
            request.body = Data(body.utf8)
            let reply = try await emulator.client.execute(request)
            #expect(reply.status == 200)
            #expect(String(decoding: reply.body, as: UTF8.self).contains("You said: hi"))
            let stats = try await emulator.json(emulator.request("/_emulator/stats")).json
            #expect(stats.string("routing", "regional_origin") == origin)
            #expect(stats.int("routing", "regional_requests", "/backend-api/codex/responses") == 1)
            #expect(stats.int("routing", "override_headers", "us") == 1)
            #expect(stats.int("originators", "chappie-test") == 2)
        }
    }

    @Test("profiles/me reports the tokens of the turns served, by day")
    func profile() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn()
            var headers = try headers(tokens)
            let empty = try await emulator.json(emulator.request("/backend-api/wham/profiles/me", headers: headers)).json
            #expect(empty.int("stats", "lifetime_tokens") == 0)
            #expect(empty.array("stats", "daily_usage_buckets")?.isEmpty == true)
            headers["Accept"] = "text/event-stream"
            let body =
                #"{"model":"gpt-5-codex","stream":true,"store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"count these words"}]}]}"#
            for _ in 0..<2 {
                let reply = try await emulator.client.execute(
                    emulator.request("/backend-api/codex/responses", method: .post, json: body, headers: headers))
                #expect(reply.status == 200)
            }
            let profile = try await emulator.json(emulator.request("/backend-api/wham/profiles/me", headers: headers)).json
            // Each turn: 17 characters of prompt (4 tokens) and "You said: count these words" (5 words).
            #expect(profile.int("stats", "lifetime_tokens") == 18)
            #expect(profile.int("stats", "total_threads") == 2)
            #expect(profile.array("stats", "daily_usage_buckets")?.count == 1)
            #expect(profile.string("stats", "daily_usage_buckets", 0, "start_date") == Date().formatted(.iso8601.year().month().day()))
            #expect(profile.int("stats", "daily_usage_buckets", 0, "tokens") == 18)
            #expect(profile.string("metadata", "stats_as_of") != nil)
        }
    }
}

import ChappieEmulator
import ChappieNet
import ChappieTestSupport
import Foundation
import Testing

@Suite("Emulator: code exchange, JWTs, refresh rotation and reuse, revocation (§1.4, §3, §4)")
struct TokenTests {
    @Test("The code exchange returns the real token-response shape with JWTs of the real claim layout")
    func exchangeAndClaims() async throws {
        var configuration = EmulatorConfiguration()
        configuration.accessTokenLifetime = .seconds(600)
        try await withEmulator(configuration) { emulator in
            let tokens = try await emulator.signIn(email: "ada@example.com", plan: "team", accountID: "3f1c2a9e-5b7d-4c1e-9a2b-7d6e5f4a3b2c")
            let id = jwtClaims(tokens.idToken)
            #expect(id.string("email") == "ada@example.com")
            #expect(id.string("https://api.openai.com/auth", "chatgpt_plan_type") == "team")
            #expect(id.string("https://api.openai.com/auth", "chatgpt_account_id") == "3f1c2a9e-5b7d-4c1e-9a2b-7d6e5f4a3b2c")
            #expect(id.string("https://api.openai.com/auth", "chatgpt_user_id")?.hasPrefix("user-") == true)
            #expect(id.bool("https://api.openai.com/auth", "chatgpt_account_is_fedramp") == false)
            let access = jwtClaims(tokens.accessToken)
            #expect(access.string("https://api.openai.com/profile", "email") == "ada@example.com")
            #expect(access.string("client_id") == codexClientID)
            let lifetime = try #require(access.int("exp")) - (try #require(access.int("iat")))
            #expect((599...600).contains(lifetime))
            // Same claim layout as the real tokens in the fixtures (jti is the emulator's only addition).
            let fixture = JSONDocument(try Fixtures.data("token-response.json"))
            let fixtureID = try #require(fixture.string("id_token"))
            let fixtureAccess = try #require(fixture.string("access_token"))
            #expect(shapeDifferences(id.root, jwtClaims(fixtureID).root) == ["$.jti extra"])
            #expect(shapeDifferences(access.root, jwtClaims(fixtureAccess).root) == ["$.jti extra"])
            #expect(tokens.refreshToken != tokens.accessToken)
        }
    }

    @Test("The exchange checks the verifier, the redirect_uri and single use of the code")
    func exchangeRefusals() async throws {
        try await withEmulator { emulator in
            let started = try await emulator.json(
                emulator.request(
                    "/api/accounts/deviceauth/usercode", method: .post, json: #"{"client_id":"\#(codexClientID)"}"#)
            ).json
            let userCode = try #require(started.string("user_code"))
            _ = try await emulator.json(
                emulator.request(
                    "/_emulator/device/approve", method: .post, json: RunningEmulator.encode(["user_code": userCode])))
            let poll = try await emulator.json(
                emulator.request(
                    "/api/accounts/deviceauth/token", method: .post,
                    json: RunningEmulator.encode(["device_auth_id": try #require(started.string("device_auth_id")), "user_code": userCode]))
            ).json
            let code = try #require(poll.string("authorization_code"))
            let verifier = try #require(poll.string("code_verifier"))
            func exchange(verifier: String, redirect: String = "https://auth.openai.com/deviceauth/callback") async throws -> (Int, JSONDocument) {
                let form =
                    "grant_type=authorization_code&client_id=\(codexClientID)&code=\(RunningEmulator.formEncode(code))"
                    + "&code_verifier=\(RunningEmulator.formEncode(verifier))&redirect_uri=\(RunningEmulator.formEncode(redirect))"
                let reply = try await emulator.json(emulator.request("/oauth/token", method: .post, form: form))
                return (reply.status, reply.json)
            }
            let badRedirect = try await exchange(verifier: verifier, redirect: "https://evil.example/deviceauth/callback")
            #expect(badRedirect.0 == 400)
            #expect(badRedirect.1.string("error") == "invalid_grant")
            let badVerifier = try await exchange(verifier: verifier + "x")
            #expect(badVerifier.0 == 400)
            #expect(shapeDifferences(badVerifier.1.root, JSONDocument(try Fixtures.data("token-invalid-grant-400.json")).root).isEmpty)
            #expect(try await exchange(verifier: verifier).0 == 200)
            let again = try await exchange(verifier: verifier)
            #expect(again.0 == 400)
            #expect(again.1.string("error") == "invalid_grant")
            let stats = try await emulator.json(emulator.request("/_emulator/stats")).json
            #expect(stats.int("authorization_code", "redemptions") == 1)
            // Every refusal counts: the wrong redirect_uri (checked against the code: a browser code
            // is bound to its own), the wrong verifier and the second use.
            #expect(stats.int("authorization_code", "rejections") == 3)
        }
    }

    @Test("A refresh (JSON body) rotates the refresh token and returns the real shape")
    func refreshRotates() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn()
            let refreshed = try await emulator.refresh(tokens.refreshToken)
            #expect(refreshed.status == 200)
            #expect(shapeDifferences(refreshed.json.root, JSONDocument(try Fixtures.data("refresh-response.json")).root).isEmpty)
            let next = try #require(refreshed.json.string("refresh_token"))
            #expect(next != tokens.refreshToken)
            #expect(refreshed.json.string("access_token") != tokens.accessToken)
            #expect(try await emulator.refresh(next).status == 200)
            let stats = try await emulator.json(emulator.request("/_emulator/stats")).json
            #expect(stats.int("refresh", "redemptions") == 2)
            #expect(stats.int("refresh", "reuse_detected") == 0)
            #expect(stats.int("refresh", "max_presentations_per_token") == 1)
        }
    }

    @Test("A second redemption is 401 refresh_token_reused and revokes the whole family")
    func reuseRevokesFamily() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn()
            let first = try await emulator.refresh(tokens.refreshToken)
            let newest = try #require(first.json.string("refresh_token"))
            let newestAccess = try #require(first.json.string("access_token"))

            let reused = try await emulator.refresh(tokens.refreshToken)
            #expect(reused.status == 401)
            #expect(reused.json.string("error", "code") == "refresh_token_reused")
            #expect(shapeDifferences(reused.json.root, JSONDocument(try Fixtures.data("refresh-reused-401.json")).root).isEmpty)

            // The family is gone: the newest refresh token and its access token no longer work.
            let afterwards = try await emulator.refresh(newest)
            #expect(afterwards.status == 401)
            #expect(afterwards.json.string("error") == "refresh_token_invalidated")
            let usage = try await emulator.client.execute(
                emulator.request("/backend-api/wham/usage", headers: ["Authorization": "Bearer \(newestAccess)"]))
            #expect(usage.status == 401)

            let stats = try await emulator.json(emulator.request("/_emulator/stats")).json
            #expect(stats.int("refresh", "redemptions") == 1)
            #expect(stats.int("refresh", "reuse_detected") == 1)
            #expect(stats.int("refresh", "max_presentations_per_token") == 2)
            #expect(stats.int("refresh", "tokens_presented_more_than_once") == 1)
        }
    }

    @Test("An expired refresh token is 401 refresh_token_expired")
    func refreshExpiry() async throws {
        var configuration = EmulatorConfiguration()
        configuration.refreshTokenLifetime = .milliseconds(300)
        try await withEmulator(configuration) { emulator in
            let tokens = try await emulator.signIn()
            try await Task.sleep(for: .milliseconds(500))
            let expired = try await emulator.refresh(tokens.refreshToken)
            #expect(expired.status == 401)
            #expect(expired.json.string("error", "code") == "refresh_token_expired")
            #expect(shapeDifferences(expired.json.root, JSONDocument(try Fixtures.data("refresh-expired-401.json")).root).isEmpty)
        }
    }

    @Test("The token endpoint refuses unknown tokens, clients and grants")
    func tokenRefusals() async throws {
        try await withEmulator { emulator in
            let unknown = try await emulator.refresh("rt_never_issued")
            #expect(unknown.status == 401)
            #expect(shapeDifferences(unknown.json.root, JSONDocument(try Fixtures.data("refresh-invalidated-401.json")).root).isEmpty)
            let client = try await emulator.json(
                emulator.request(
                    "/oauth/token", method: .post, json: #"{"client_id":"other","grant_type":"refresh_token","refresh_token":"x"}"#))
            #expect(client.status == 401)
            #expect(client.json.string("error") == "invalid_client")
            let grant = try await emulator.json(
                emulator.request(
                    "/oauth/token", method: .post, json: #"{"client_id":"\#(codexClientID)","grant_type":"password"}"#))
            #expect(grant.status == 400)
            #expect(grant.json.string("error") == "unsupported_grant_type")
            let garbage = try await emulator.json(emulator.request("/oauth/token", method: .post, json: "[1,2"))
            #expect(garbage.status == 400)
        }
    }

    @Test("/oauth/revoke of a refresh token ends its family; of an access token, that token")
    func revoke() async throws {
        try await withEmulator { emulator in
            let a = try await emulator.signIn()
            let revoked = try await emulator.json(
                emulator.request(
                    "/oauth/revoke", method: .post,
                    json: RunningEmulator.encode(["token": a.refreshToken, "token_type_hint": "refresh_token", "client_id": codexClientID])))
            #expect(revoked.status == 200)
            #expect(try await emulator.refresh(a.refreshToken).status == 401)
            let usageA = try await emulator.client.execute(
                emulator.request("/backend-api/wham/usage", headers: ["Authorization": "Bearer \(a.accessToken)"]))
            #expect(usageA.status == 401)

            let b = try await emulator.signIn()
            _ = try await emulator.json(
                emulator.request(
                    "/oauth/revoke", method: .post, json: RunningEmulator.encode(["token": b.accessToken, "token_type_hint": "access_token"])))
            let usageB = try await emulator.client.execute(
                emulator.request("/backend-api/wham/usage", headers: ["Authorization": "Bearer \(b.accessToken)"]))
            #expect(usageB.status == 401)
            #expect(try await emulator.refresh(b.refreshToken).status == 200)
        }
    }

    @Test("An expired access token is refused with 401 token_expired")
    func accessTokenExpiry() async throws {
        var configuration = EmulatorConfiguration()
        configuration.accessTokenLifetime = .seconds(1)
        try await withEmulator(configuration) { emulator in
            let tokens = try await emulator.signIn()
            let exp = try #require(jwtClaims(tokens.accessToken).int("exp"))
            // Wait past the whole second the JWT names.
            while Date().timeIntervalSince1970 < Double(exp) + 0.1 { try await Task.sleep(for: .milliseconds(100)) }
            let usage = try await emulator.json(
                emulator.request(
                    "/backend-api/wham/usage", headers: ["Authorization": "Bearer \(tokens.accessToken)"]))
            #expect(usage.status == 401)
            #expect(usage.json.string("error", "code") == "token_expired")
        }
    }
}

import ChappieEmulator
import ChappieNet
import ChappieTestSupport
import Foundation
import Testing

@Suite("Emulator: usage and streamed responses (§6, §7.1, §8.1)")
struct BackendTests {
    private func bearer(_ tokens: IssuedTokens) -> ChappieHTTPHeaders {
        ["Authorization": "Bearer \(tokens.accessToken)"]
    }

    private func accountID(_ tokens: IssuedTokens) throws -> String {
        try #require(jwtClaims(tokens.accessToken).string("https://api.openai.com/auth", "chatgpt_account_id"))
    }

    private func responsesRequest(_ emulator: RunningEmulator, _ tokens: IssuedTokens, text: String = "hi there") throws -> ChappieHTTPRequest {
        var headers = bearer(tokens)
        headers["ChatGPT-Account-Id"] = try accountID(tokens)
        headers["Accept"] = "text/event-stream"
        let body =
            #"{"model":"gpt-5-codex","stream":true,"store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"\#(text)"}]}]}"#
        return emulator.request("/backend-api/codex/responses", method: .post, json: body, headers: headers)
    }

    private func setUsage(_ emulator: RunningEmulator, _ account: String, _ body: String) async throws {
        let reply = try await emulator.json(emulator.request("/_emulator/accounts/\(account)/usage", method: .post, json: body))
        #expect(reply.status == 200)
    }

    @Test("wham/usage has the real shape, per account, with 5-hour and weekly windows")
    func usageShape() async throws {
        try await withEmulator { emulator in
            let plus = try await emulator.signIn(email: "p@example.com", plan: "plus")
            let pro = try await emulator.signIn(email: "q@example.com", plan: "pro")
            try await setUsage(emulator, try accountID(plus), #"{"five_hour_used_percent":37,"weekly_used_percent":61}"#)
            let usage = try await emulator.json(emulator.request("/backend-api/wham/usage", headers: bearer(plus)))
            #expect(usage.status == 200)
            #expect(shapeDifferences(usage.json.root, JSONDocument(try Fixtures.data("wham-usage-plus.json")).root).isEmpty)
            #expect(usage.json.string("plan_type") == "plus")
            #expect(usage.json.int("rate_limit", "primary_window", "used_percent") == 37)
            #expect(usage.json.int("rate_limit", "primary_window", "limit_window_seconds") == 18000)
            #expect(usage.json.int("rate_limit", "secondary_window", "used_percent") == 61)
            #expect(usage.json.int("rate_limit", "secondary_window", "limit_window_seconds") == 604800)
            let other = try await emulator.json(emulator.request("/backend-api/wham/usage", headers: bearer(pro)))
            #expect(other.json.string("plan_type") == "pro")
            #expect(other.json.int("rate_limit", "primary_window", "used_percent") == 0)
        }
    }

    @Test("A free plan reports only the weekly window, in primary_window")
    func weeklyOnly() async throws {
        try await withEmulator { emulator in
            let free = try await emulator.signIn(plan: "free")
            let usage = try await emulator.json(emulator.request("/backend-api/wham/usage", headers: bearer(free)))
            #expect(usage.json.int("rate_limit", "primary_window", "limit_window_seconds") == 604800)
            #expect(usage.json.isNull("rate_limit", "secondary_window"))
            #expect(
                shapeDifferences(
                    usage.json.value(["rate_limit"]), JSONDocument(try Fixtures.data("wham-usage-weekly-only.json")).value(["rate_limit"])
                ).isEmpty)
        }
    }

    @Test("A full window reports limit_reached and rate_limit_reached_type")
    func usageLimitReached() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn(plan: "pro")
            try await setUsage(emulator, try accountID(tokens), #"{"five_hour_used_percent":100}"#)
            let usage = try await emulator.json(emulator.request("/backend-api/wham/usage", headers: bearer(tokens)))
            #expect(usage.json.bool("rate_limit", "limit_reached") == true)
            #expect(usage.json.bool("rate_limit", "allowed") == false)
            #expect(usage.json.string("rate_limit_reached_type", "type") == "rate_limit_reached")
        }
    }

    @Test("The backend refuses a missing token, an unknown token and a mismatched account header")
    func backendAuth() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn()
            #expect(try await emulator.json(emulator.request("/backend-api/wham/usage")).status == 401)
            let forged = try await emulator.json(emulator.request("/backend-api/wham/usage", headers: ["Authorization": "Bearer eyJhbGciOi.x.y"]))
            #expect(forged.status == 401)
            #expect(forged.json.string("error", "code") == "token_invalidated")
            var headers = bearer(tokens)
            headers["ChatGPT-Account-Id"] = "00000000-0000-0000-0000-000000000000"
            #expect(try await emulator.json(emulator.request("/backend-api/wham/usage", headers: headers)).status == 403)
        }
    }

    @Test("responses streams the real event sequence with rate-limit headers, and uses the windows")
    func responsesStream() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn(plan: "plus")
            let response = try await emulator.client.stream(try responsesRequest(emulator, tokens))
            #expect(response.status == 200)
            #expect(response.headers["content-type"] == "text/event-stream")
            #expect(response.headers["x-codex-primary-used-percent"] == "2.0")
            #expect(response.headers["x-codex-primary-window-minutes"] == "300")
            #expect(response.headers["x-codex-secondary-window-minutes"] == "10080")
            #expect(response.headers["x-codex-credits-has-credits"] == "False")
            #expect(response.headers["openai-model"] == "gpt-5-codex")
            var types: [String] = []
            var text = ""
            for try await event in response.body.serverSentEvents {
                types.append(event.type)
                let data = JSONDocument(Data(event.data.utf8))
                #expect(data.string("type") == event.type)
                if event.type == "response.output_text.delta" { text += data.string("delta") ?? "" }
                if event.type == "codex.rate_limits" {
                    #expect(data.number("rate_limits", "primary", "used_percent") == 2)
                    #expect(data.int("rate_limits", "secondary", "window_minutes") == 10080)
                }
                if event.type == "response.completed" {
                    #expect(data.string("response", "status") == "completed")
                    #expect(data.has("response", "usage", "total_tokens"))
                }
            }
            #expect(types.first == "response.created")
            #expect(types.last == "response.completed")
            #expect(types.contains("codex.rate_limits"))
            #expect(text == "You said: hi there")
            let usage = try await emulator.json(emulator.request("/backend-api/wham/usage", headers: bearer(tokens)))
            #expect(usage.json.int("rate_limit", "primary_window", "used_percent") == 2)
            #expect(usage.json.int("rate_limit", "secondary_window", "used_percent") == 1)
        }
    }

    @Test("A full window turns responses into 429 usage_limit_reached with the real body")
    func responsesLimit() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn(plan: "plus")
            try await setUsage(emulator, try accountID(tokens), #"{"weekly_used_percent":100}"#)
            let reply = try await emulator.json(try responsesRequest(emulator, tokens))
            #expect(reply.status == 429)
            #expect(reply.json.string("error", "type") == "usage_limit_reached")
            #expect(shapeDifferences(reply.json.root, JSONDocument(try Fixtures.data("usage-limit-reached-429.json")).root).isEmpty)
            let resetsIn = try #require(reply.json.int("error", "resets_in_seconds"))
            #expect(resetsIn > 86400)
        }
    }

    @Test("Enough responses fill the 5-hour window, and then the 429 comes")
    func windowsAdvance() async throws {
        var configuration = EmulatorConfiguration()
        configuration.primaryCostPerResponse = 50
        try await withEmulator(configuration) { emulator in
            let tokens = try await emulator.signIn()
            for _ in 0..<2 {
                let response = try await emulator.client.execute(try responsesRequest(emulator, tokens))
                #expect(response.status == 200)
            }
            #expect(try await emulator.client.execute(try responsesRequest(emulator, tokens)).status == 429)
        }
    }

    @Test("An account without Codex gets 429 usage_not_included")
    func usageNotIncluded() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn(plan: "free")
            try await setUsage(emulator, try accountID(tokens), #"{"codex_included":false}"#)
            let reply = try await emulator.json(try responsesRequest(emulator, tokens))
            #expect(reply.status == 429)
            #expect(shapeDifferences(reply.json.root, JSONDocument(try Fixtures.data("usage-not-included-429.json")).root).isEmpty)
        }
    }

    @Test("responses refuses a body that is not JSON, or that does not ask to stream")
    func responsesBadRequest() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn()
            var request = try responsesRequest(emulator, tokens)
            request.body = Data("{not json".utf8)
            #expect(try await emulator.client.execute(request).status == 400)
            request.body = Data(#"{"model":"gpt-5-codex","stream":false,"input":[]}"#.utf8)
            #expect(try await emulator.client.execute(request).status == 400)
        }
    }
}

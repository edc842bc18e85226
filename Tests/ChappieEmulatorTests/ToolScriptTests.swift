import ChappieEmulator
import ChappieNet
import ChappieTestSupport
import Foundation
import Testing

@Suite("Emulator: the scripted model for host tools (§8.1 tool items)")
struct ToolScriptTests {
    /// A `POST …/codex/responses` with this `input` (JSON text), continuing `previous` when given.
    private func responses(
        _ emulator: RunningEmulator, _ tokens: IssuedTokens, input: String, conversation: String = "conv-1", previous: String? = nil
    ) throws -> ChappieHTTPRequest {
        let accountID = try #require(jwtClaims(tokens.accessToken).string("https://api.openai.com/auth", "chatgpt_account_id"))
        let continued = previous.map { #","previous_response_id":"\#($0)""# } ?? ""
        let body = #"{"model":"gpt-5-codex","stream":true,"store":false,"prompt_cache_key":"\#(conversation)"\#(continued),"input":\#(input)}"#
        return emulator.request(
            "/backend-api/codex/responses", method: .post, json: body,
            headers: ["Authorization": "Bearer \(tokens.accessToken)", "ChatGPT-Account-Id": accountID])
    }

    /// The events of a streamed reply, as (type, data) pairs.
    private func events(_ emulator: RunningEmulator, _ request: ChappieHTTPRequest) async throws -> [(type: String, data: JSONDocument)] {
        let response = try await emulator.client.stream(request)
        #expect(response.status == 200)
        var events: [(String, JSONDocument)] = []
        for try await event in response.body.serverSentEvents { events.append((event.type, JSONDocument(Data(event.data.utf8)))) }
        return events
    }

    private static let prompt = #"{"type":"message","role":"user","content":[{"type":"input_text","text":"time?"}]}"#

    @Test("A queued script makes the next turn call the tool, in the real item shape; its output is answered with text that quotes it")
    func callAndAnswer() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn(plan: "plus")
            let queued = try await emulator.json(
                emulator.request(
                    "/_emulator/tools/script", method: .post, json: #"{"name":"get_time","arguments":"{\"zone\":\"UTC\"}"}"#))
            #expect(queued.status == 201)
            let first = try await events(emulator, try responses(emulator, tokens, input: "[\(Self.prompt)]"))
            #expect(first.map(\.type).first == "response.created")
            #expect(first.map(\.type).last == "response.completed")
            #expect(!first.contains { $0.type == "response.output_text.delta" })
            let done = try #require(first.first { $0.type == "response.output_item.done" }).data
            var decoder = ServerSentEventDecoder()
            let fixture = decoder.decode(try Fixtures.data("responses-tool-call.sse")).first { $0.type == "response.output_item.done" }
            let expected = JSONDocument(Data(try #require(fixture).data.utf8))
            #expect(shapeDifferences(done.root, expected.root).isEmpty)
            #expect(done.string("item", "name") == "get_time")
            #expect(done.string("item", "arguments") == #"{"zone":"UTC"}"#)
            let callID = try #require(done.string("item", "call_id"))

            let call = #"{"type":"function_call","call_id":"\#(callID)","name":"get_time","arguments":"{\"zone\":\"UTC\"}"}"#
            let output = #"{"type":"function_call_output","call_id":"\#(callID)","output":"noon"}"#
            let second = try await events(emulator, try responses(emulator, tokens, input: "[\(Self.prompt),\(call),\(output)]"))
            let text = second.filter { $0.type == "response.output_text.delta" }.compactMap { $0.data.string("delta") }.joined()
            #expect(text == "The tool get_time returned: noon")
            let stats = try await emulator.json(emulator.request("/_emulator/stats")).json
            #expect(stats.int("tool_scripts", "calls_issued") == 1)
            #expect(stats.int("tool_scripts", "outputs_accepted") == 1)
            #expect(stats.int("tool_scripts", "queued") == 0)
        }
    }

    @Test("A follow-up that continues the response (previous_response_id, as Codex 0.163 over the WebSocket) sends only the output, and is answered")
    func continuedFollowUp() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn(plan: "plus")
            _ = try await emulator.json(emulator.request("/_emulator/tools/script", method: .post, json: #"{"name":"get_time"}"#))
            let first = try await events(emulator, try responses(emulator, tokens, input: "[\(Self.prompt)]"))
            let callID = try #require(first.first { $0.type == "response.output_item.done" }?.data.string("item", "call_id"))
            let responseID = try #require(first.first { $0.type == "response.completed" }?.data.string("response", "id"))
            let output = #"{"type":"function_call_output","call_id":"\#(callID)","output":"noon"}"#
            // Without previous_response_id the output alone has no call: refused, as before.
            let alone = try await emulator.json(try responses(emulator, tokens, input: "[\(output)]", conversation: "conv-2"))
            #expect(alone.status == 400)
            let continued = try await events(emulator, try responses(emulator, tokens, input: "[\(output)]", previous: responseID))
            let text = continued.filter { $0.type == "response.output_text.delta" }.compactMap { $0.data.string("delta") }.joined()
            #expect(text == "The tool get_time returned: noon")
        }
    }

    @Test("An output for a call the model never made, or a call sent without its output, is refused with 400 as the real API does")
    func mismatchedOutputs() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn(plan: "plus")
            let stray = #"{"type":"function_call_output","call_id":"call_unknown","output":"x"}"#
            let orphan = #"{"type":"function_call","call_id":"call_unanswered","name":"get_time","arguments":"{}"}"#
            for (input, message) in [
                ("[\(Self.prompt),\(stray)]", "No tool call found for function call output with call_id call_unknown."),
                ("[\(Self.prompt),\(orphan)]", "No tool output found for function call call_unanswered."),
            ] {
                let reply = try await emulator.json(try responses(emulator, tokens, input: input))
                #expect(reply.status == 400)
                #expect(reply.json.string("error", "message") == message)
                #expect(reply.json.string("error", "param") == "input")
            }
            let stats = try await emulator.json(emulator.request("/_emulator/stats")).json
            #expect(stats.int("tool_scripts", "outputs_refused") == 2)
        }
    }

    @Test("The same request in the same conversation gets the same call (a replay); another conversation gets the echo")
    func replayedRequest() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn(plan: "plus")
            _ = try await emulator.json(emulator.request("/_emulator/tools/script", method: .post, json: #"{"name":"get_time"}"#))
            let input = "[\(Self.prompt)]"
            func callID(_ events: [(type: String, data: JSONDocument)]) -> String? {
                events.first { $0.type == "response.output_item.done" }?.data.string("item", "call_id")
            }
            let first = try await events(emulator, try responses(emulator, tokens, input: input))
            let again = try await events(emulator, try responses(emulator, tokens, input: input))
            #expect(callID(first) != nil)
            #expect(callID(again) == callID(first))
            let other = try await events(emulator, try responses(emulator, tokens, input: input, conversation: "conv-2"))
            #expect(other.first { $0.type == "response.output_item.done" }?.data.string("item", "type") == "message")
        }
    }

    @Test("The control call checks its body; DELETE drops the queue")
    func controlValidation() async throws {
        try await withEmulator { emulator in
            for body in [#"{}"#, #"{"name":""}"#, #"{"name":"t","rounds":0}"#, "not json"] {
                let reply = try await emulator.json(emulator.request("/_emulator/tools/script", method: .post, json: body))
                #expect(reply.status == 400)
            }
            _ = try await emulator.json(emulator.request("/_emulator/tools/script", method: .post, json: #"{"name":"t","forever":true}"#))
            let cleared = try await emulator.client.execute(emulator.request("/_emulator/tools/script", method: .delete))
            #expect(cleared.status == 204)
            let stats = try await emulator.json(emulator.request("/_emulator/stats")).json
            #expect(stats.int("tool_scripts", "queued") == 0)
        }
    }
}

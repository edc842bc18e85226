import ChappieEmulator
import ChappieNet
import ChappieTestSupport
import Foundation
import Testing

@Suite("Emulator: injected faults through the control API")
struct FaultTests {
    private func inject(_ emulator: RunningEmulator, _ json: String) async throws {
        let reply = try await emulator.json(emulator.request("/_emulator/faults", method: .post, json: json))
        #expect(reply.status == 201)
    }

    private func streamTypes(_ emulator: RunningEmulator, _ tokens: IssuedTokens) async throws -> (types: [String], cut: Bool) {
        let request = emulator.request(
            "/backend-api/codex/responses", method: .post,
            json: #"{"model":"gpt-5-codex","stream":true,"input":[]}"#, headers: ["Authorization": "Bearer \(tokens.accessToken)"])
        let response = try await emulator.client.stream(request)
        var decoder = ServerSentEventDecoder()
        var types: [String] = []
        for try await chunk in response.body { types += decoder.decode(chunk).map(\.type) }
        return (types, decoder.finish())
    }

    @Test("A status fault answers that status for the next N requests of its path, then stops")
    func statusFault() async throws {
        try await withEmulator { emulator in
            try await inject(emulator, #"{"kind":"status","status":503,"count":2,"path":"/.well-known"}"#)
            let discovery = emulator.request("/.well-known/openid-configuration")
            // Another path is not affected.
            #expect(try await emulator.client.execute(emulator.request("/backend-api/wham/usage")).status == 401)
            #expect(try await emulator.client.execute(discovery).status == 503)
            #expect(try await emulator.client.execute(discovery).status == 503)
            #expect(try await emulator.client.execute(discovery).status == 200)
        }
    }

    @Test("A status fault can carry a body, such as a real 401")
    func statusFaultBody() async throws {
        try await withEmulator { emulator in
            let body = String(decoding: try Fixtures.data("refresh-reused-401.json"), as: UTF8.self)
            let fault =
                #"{"kind":"status","status":401,"path":"/oauth/token","body":"#
                + String(decoding: try JSONSerialization.data(withJSONObject: [body], options: [.fragmentsAllowed]), as: UTF8.self).dropFirst()
                .dropLast()
                + "}"
            try await inject(emulator, fault)
            let reply = try await emulator.refresh("anything")
            #expect(reply.status == 401)
            #expect(reply.json.string("error", "code") == "refresh_token_reused")
        }
    }

    @Test("A latency fault delays the answer")
    func latencyFault() async throws {
        try await withEmulator { emulator in
            try await inject(emulator, #"{"kind":"latency","ms":400}"#)
            let clock = ContinuousClock()
            let start = clock.now
            #expect(try await emulator.client.execute(emulator.request("/.well-known/openid-configuration")).status == 200)
            #expect(clock.now - start >= .milliseconds(400))
        }
    }

    @Test("A malformed fault answers 200 with a body that is not JSON")
    func malformedFault() async throws {
        try await withEmulator { emulator in
            try await inject(emulator, #"{"kind":"malformed"}"#)
            let response = try await emulator.client.execute(emulator.request("/.well-known/openid-configuration"))
            #expect(response.status == 200)
            #expect((try? JSONSerialization.jsonObject(with: response.body)) == nil)
        }
    }

    @Test("A truncated fault drops the connection part-way through the body")
    func truncatedFault() async throws {
        try await withEmulator { emulator in
            try await inject(emulator, #"{"kind":"truncated"}"#)
            await #expect { _ = try await emulator.client.execute(emulator.request("/.well-known/openid-configuration")) } throws: { error in
                (error as? ChappieHTTPClientError)?.code == .connectionLost
            }
            // The next request works again.
            #expect(try await emulator.client.execute(emulator.request("/.well-known/openid-configuration")).status == 200)
        }
    }

    @Test("A cut_stream fault ends the stream mid-event, without response.completed")
    func cutStream() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn()
            try await inject(emulator, #"{"kind":"cut_stream","after_events":3}"#)
            let (types, cut) = try await streamTypes(emulator, tokens)
            #expect(types.count == 3)
            #expect(!types.contains("response.completed"))
            #expect(cut)
        }
    }

    @Test("A fail_stream fault sends a delta and then response.failed")
    func failStream() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn()
            try await inject(emulator, #"{"kind":"fail_stream"}"#)
            let (types, cut) = try await streamTypes(emulator, tokens)
            #expect(types == ["response.created", "response.output_item.added", "response.output_text.delta", "response.failed"])
            #expect(!cut)
        }
    }

    @Test("Bad fault requests are refused, and DELETE clears pending faults")
    func faultControl() async throws {
        try await withEmulator { emulator in
            for body in [
                #"{"kind":"explode"}"#, #"{"kind":"status"}"#, #"{"kind":"status","status":99}"#, #"{"kind":"latency"}"#, "not json",
                #"{"kind":"malformed","count":0}"#,
            ] {
                #expect(try await emulator.json(emulator.request("/_emulator/faults", method: .post, json: body)).status == 400)
            }
            try await inject(emulator, #"{"kind":"status","status":500,"count":5}"#)
            #expect(try await emulator.client.execute(emulator.request("/_emulator/faults", method: .delete)).status == 204)
            #expect(try await emulator.client.execute(emulator.request("/.well-known/openid-configuration")).status == 200)
        }
    }

    @Test("The control API is never faulted, and stats count requests by path")
    func controlNotFaulted() async throws {
        try await withEmulator { emulator in
            try await inject(emulator, #"{"kind":"status","status":500,"count":3}"#)
            let stats = try await emulator.json(emulator.request("/_emulator/stats"))
            #expect(stats.status == 200)
            _ = try await emulator.client.execute(emulator.request("/.well-known/openid-configuration"))
            let after = try await emulator.json(emulator.request("/_emulator/stats")).json
            #expect(after.int("requests", "/.well-known/openid-configuration") == 1)
        }
    }
}

import Chappie
import ChappieEmulator
import ChappieStore
import ChappieTestSupport
import Foundation
import Testing

/// The streaming sample of docs/sdk.md, unchanged: it must compile (it is not run, as it would open the store of the
/// environment's home).
@MainActor
private func seed003Sample() -> (ChappieAuthSession, ChappieClient) {
    let config = ChappieConfiguration(
        streamingTransportPolicy: .httpSSEOnly
    )

    let authSession = Chappie.authSession(configuration: config)
    let client = Chappie.client(configuration: config)
    return (authSession, client)
}

@Suite("Streaming over WebSocket: the default transport, reconnects, replay, fall-back (docs/sdk.md)")
struct WebSocketStreamingTests {
    private let tests = ClientTests()
    private static let prompt = "tell me something new"
    private static let reply = "You said: tell me something new"

    /// Collects a stream's text deltas.
    private func deltas(_ client: ChappieClient, _ prompt: String = prompt) async throws -> [String] {
        var deltas: [String] = []
        for try await event in client.stream(prompt) {
            if case .textDelta(let delta) = event { deltas.append(delta) }
        }
        return deltas
    }

    @Test("The default policy streams over a WebSocket per request: usage from the upgrade first, the same events as SSE, no POST")
    func defaultTransport() async throws {
        try await tests.withSetup { setup in
            let client = setup.client(transport: .default)
            #expect(client.activeTransport == .webSocket)
            var events: [ChappieStreamEvent] = []
            for try await event in client.stream(Self.prompt) { events.append(event) }
            guard case .usageLimits(let first)? = events.first else {
                Issue.record("first: \(String(describing: events.first))")
                return
            }
            #expect(first.shortWindow != nil)
            let text = events.compactMap { if case .textDelta(let delta) = $0 { delta } else { nil } }.joined()
            #expect(text == Self.reply)
            #expect(events.contains { if case .raw(type: "response.created", _) = $0 { true } else { false } })
            guard case .completed(let response)? = events.last else {
                Issue.record("last: \(String(describing: events.last))")
                return
            }
            #expect(response.text == Self.reply)
            #expect(try await client.send("again") == "You said: again")
            let stats = try await setup.stats()
            #expect(stats.int("websocket", "opened") == 2)
            #expect(stats.int("websocket", "turns") == 2)
            #expect(stats.int("requests", "/backend-api/codex/responses") == 2)  // the two upgrades, no POST
            #expect(client.activeTransport == .webSocket)
            let samples = try await setup.store.usageSamples(for: try await setup.store.account(named: AccountName("work")), since: nil, until: nil)
            #expect(Set(samples.map(\.source)) == [.headers, .stream])
        }
    }

    @Test("A refused upgrade: exactly 5 reconnects, then HTTP/SSE for that turn and every later one")
    func fallBack() async throws {
        try await tests.withSetup { setup in
            try await setup.fault(#"{"kind":"refuse_upgrade","status":404,"count":100}"#)
            let client = setup.client(transport: .default)
            #expect(try await deltas(client).joined() == Self.reply)
            var stats = try await setup.stats()
            #expect(stats.int("websocket", "refused") == 6)
            #expect(stats.int("websocket", "opened") == 0)
            #expect(client.activeTransport == .httpSSE)
            #expect(client.transportFallbackReason?.contains("404") == true)
            #expect(try await client.send("later") == "You said: later")
            stats = try await setup.stats()
            #expect(stats.int("websocket", "refused") == 6)  // never back to WebSocket
            #expect(stats.int("requests", "/backend-api/codex/responses") == 6 + 2)
        }
    }

    @Test("Without fall-back, the refusal surfaces after 1 + maxWebSocketReconnectionAttempts attempts")
    func noFallBack() async throws {
        try await tests.withSetup { setup in
            try await setup.fault(#"{"kind":"refuse_upgrade","status":404,"count":100}"#)
            let client = setup.client(transport: ChappieStreamingTransportPolicy(maxWebSocketReconnectionAttempts: 2, fallsBackToHTTPSSE: false))
            await #expect { _ = try await client.send("hi") } throws: { error in
                if case ChappieClientError.httpError(404, _) = error { true } else { false }
            }
            #expect(try await setup.stats().int("websocket", "refused") == 3)
            #expect(client.activeTransport == .webSocket)
        }
    }

    @Test(".httpSSEOnly never opens a socket")
    func sseOnly() async throws {
        try await tests.withSetup { setup in
            let client = setup.client(transport: .httpSSEOnly)
            #expect(client.activeTransport == .httpSSE)
            #expect(try await client.send("hi") == "You said: hi")
            let stats = try await setup.stats()
            #expect(stats.int("websocket", "opened") == 0)
            #expect(stats.int("websocket", "refused") == 0)
            #expect(stats.int("responses_streamed") == 1)
        }
    }

    @Test("A socket dropped mid-turn reconnects with the same request; the replayed deltas are not delivered twice")
    func replaySuppressed() async throws {
        try await tests.withSetup { setup in
            // created, item added, "You ", "said: " — then the socket closes.
            try await setup.fault(#"{"kind":"drop_socket","after_events":4}"#)
            let deltas = try await deltas(setup.client(transport: .default))
            #expect(deltas.joined() == Self.reply)
            #expect(deltas == ["You ", "said: ", "tell ", "me ", "something ", "new"])
            let stats = try await setup.stats()
            #expect(stats.int("websocket", "opened") == 2)
            #expect(stats.int("websocket", "replays") == 1)
        }
    }

    @Test("A replay that differs from the delivered text ends the stream with streamingTransportReplayDiverged(partial)")
    func divergence() async throws {
        try await tests.withSetup { setup in
            try await setup.fault(#"{"kind":"drop_socket","after_events":4,"divergent":true}"#)
            var delivered = ""
            do {
                for try await event in setup.client(transport: .default).stream(Self.prompt) {
                    if case .textDelta(let delta) = event { delivered += delta }
                }
                Issue.record("no error")
            } catch ChappieClientError.streamingTransportReplayDiverged(let partial) {
                #expect(partial == "You said: ")
                #expect(delivered == partial)
            }
        }
    }

    @Test("A binary frame is a failure that reconnects; the replay completes the text")
    func binaryFrame() async throws {
        try await tests.withSetup { setup in
            try await setup.fault(#"{"kind":"binary_frame","after_events":3}"#)
            #expect(try await deltas(setup.client(transport: .default)).joined() == Self.reply)
            #expect(try await setup.stats().int("websocket", "opened") == 2)
        }
    }

    @Test("A frame that is not JSON ends the stream with invalidResponse, keeping nothing back, and is not retried")
    func malformedFrame() async throws {
        try await tests.withSetup { setup in
            try await setup.fault(#"{"kind":"bad_event"}"#)
            await #expect { _ = try await setup.client(transport: .default).send("hi") } throws: { error in
                if case ChappieClientError.invalidResponse(let reason) = error { reason.contains("not a JSON object") } else { false }
            }
            #expect(try await setup.stats().int("websocket", "opened") == 1)
        }
    }

    @Test("websocket_connection_limit_reached opens a new socket without spending the reconnect budget")
    func connectionLimit() async throws {
        try await tests.withSetup { setup in
            try await setup.fault(#"{"kind":"connection_limit","count":3}"#)
            let client = setup.client(transport: ChappieStreamingTransportPolicy(maxWebSocketReconnectionAttempts: 1, fallsBackToHTTPSSE: false))
            #expect(try await client.send("hi") == "You said: hi")
            #expect(try await setup.stats().int("websocket", "opened") == 4)
        }
    }

    @Test("A full window over WebSocket: the wrapped 429 is retried per the backoff, then usageLimitReached with the windows of its headers")
    func usageLimit() async throws {
        try await tests.withSetup { setup in
            try await setup.setUsage(#"{"five_hour_used_percent":100}"#)
            do {
                _ = try await setup.client(ChappieRateLimitBackoffPolicy(maxRetries: 2, initialDelay: 0.01), transport: .default).send("hi")
                Issue.record("no error")
            } catch ChappieClientError.usageLimitReached(let limit) {
                #expect(limit.plan == .plus)
                #expect(limit.rateLimit?.shortWindow?.usedPercent == 100)
            }
            let stats = try await setup.stats()
            #expect(stats.int("websocket", "turns") == 3)
            #expect(stats.int("websocket", "opened") == 3)
            #expect(stats.int("requests", "/backend-api/codex/responses") == 3)  // upgrades only: no fall-back to POST
        }
    }

    @Test("A 401 on the upgrade refreshes once and reconnects; the status is told apart from a 404")
    func unauthorizedUpgrade() async throws {
        try await tests.withSetup { setup in
            try await setup.fault(#"{"kind":"refuse_upgrade","status":401,"count":1}"#)
            let client = setup.client(transport: .default)
            #expect(try await client.send("hi") == "You said: hi")
            let stats = try await setup.stats()
            #expect(stats.int("refresh", "redemptions") == 1)
            #expect(stats.int("websocket", "opened") == 1)
            #expect(client.activeTransport == .webSocket)
        }
    }

    @Test(
        "Cancelling the task that iterates a WebSocket stream ends it (CancellationError, or the documented check after the loop) and closes the socket"
    )
    func cancellation() async throws {
        try await tests.withSetup { setup in
            try await setup.fault(#"{"kind":"slow_stream","ms":300}"#)
            let client = setup.client(transport: .default)
            let firstDelta = AsyncStream<Void>.makeStream()
            let task = Task {
                var deltas = 0
                for try await event in client.stream("one two three four five six seven eight") {
                    if case .textDelta = event {
                        deltas += 1
                        firstDelta.continuation.yield()
                    }
                }
                // Wherever the cancellation lands, the loop throws: reaching here is a failure.
                return deltas
            }
            for await _ in firstDelta.stream { break }
            task.cancel()
            await #expect(throws: CancellationError.self) { _ = try await task.value }
            var aborted = false
            for _ in 0..<50 {
                if try await setup.stats().int("websocket", "turns_aborted") == 1 {
                    aborted = true
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(aborted)
        }
    }

    @Test("The sample configuration of docs/sdk.md reaches the client: .httpSSEOnly from ChappieConfiguration")
    func seedConfiguration() async throws {
        let config = ChappieConfiguration(streamingTransportPolicy: .httpSSEOnly, rateLimitBackoff: .disabled)
        let client = Chappie.client(configuration: config)
        #expect(client.streamingTransportPolicy == .httpSSEOnly)
        #expect(client.rateLimitBackoff == .disabled)
        #expect(client.activeTransport == .httpSSE)
        #expect(Chappie.client(rateLimitBackoff: .disabled).streamingTransportPolicy == .default)
        #expect(Chappie.client(streamingTransportPolicy: .httpSSEOnly).rateLimitBackoff == .default)
        _ = seed003Sample  // compiled above, unchanged
    }
}

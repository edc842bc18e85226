import Chappie
import ChappieEmulator
import ChappieNet
import ChappieStore
import ChappieTestSupport
import Foundation
import Testing

@Suite("ChappieClient against the emulator: events, errors, backoff, 401 recovery, cancellation")
struct ClientTests {
    /// A store with one signed-in account named `work`, and a client for it.
    struct Setup {
        let emulator: RunningEmulator
        let home: URL
        let store: SQLiteAccountStore
        let accountID: String
        let configuration: ChappieConfiguration

        func client(_ backoff: ChappieRateLimitBackoffPolicy = .default, transport: ChappieStreamingTransportPolicy = .httpSSEOnly) -> ChappieClient {
            var configuration = configuration
            configuration.rateLimitBackoff = backoff
            configuration.streamingTransportPolicy = transport
            configuration.webSocketReconnectDelay = .milliseconds(5)
            return Chappie.client(configuration: configuration)
        }

        func fault(_ json: String) async throws {
            let reply = try await emulator.client.execute(emulator.request("/_emulator/faults", method: .post, json: json))
            #expect(reply.status == 201)
        }

        func setUsage(_ json: String) async throws {
            _ = try await emulator.client.execute(emulator.request("/_emulator/accounts/\(accountID)/usage", method: .post, json: json))
        }

        func stats() async throws -> JSONDocument {
            try await emulator.json(emulator.request("/_emulator/stats")).json
        }
    }

    func withSetup(_ configuration: EmulatorConfiguration = EmulatorConfiguration(), _ body: (Setup) async throws -> Void) async throws {
        try await withEmulator(configuration) { emulator in
            let home = try TestTokens.temporaryDirectory("chappie-client")
            defer { try? FileManager.default.removeItem(at: home) }
            let options = StoreOptions(home: home.path, environment: [:])
            let store = try await StoreOpener.open(options).local!
            let tokens = try await emulator.signIn(email: "work@example.com", plan: "plus")
            let info = try TokenClaims(jwt: tokens.idToken).account
            _ = try await store.save(
                info: info, credentials: Credentials(idToken: tokens.idToken, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken),
                accessTokenExpiresAt: try TokenClaims(jwt: tokens.accessToken).expiresAt, refreshedAt: Date(), name: try AccountName("work"),
                event: .signedIn)
            let endpoints = try ChappieEndpoints(issuer: emulator.baseURL.absoluteString, backend: emulator.backendURL.absoluteString)
            try await body(
                Setup(
                    emulator: emulator, home: home, store: store, accountID: try #require(info.accountID),
                    configuration: ChappieConfiguration(account: try AccountName("work"), store: options, endpoints: endpoints)))
        }
    }

    @Test("A streamed reply: usage from the headers first, deltas in order and never empty, raw events, completed; samples stored")
    func streamEvents() async throws {
        try await withSetup { setup in
            var events: [ChappieStreamEvent] = []
            for try await event in setup.client().stream("tell me something") { events.append(event) }
            guard case .usageLimits(let first)? = events.first else {
                Issue.record("first event: \(String(describing: events.first))")
                return
            }
            #expect(first.shortWindow?.usedPercent == 2)
            #expect(first.longWindow?.windowMinutes == 10080)
            let deltas = events.compactMap { if case .textDelta(let text) = $0 { text } else { nil } }
            #expect(deltas.joined() == "You said: tell me something")
            #expect(!deltas.contains(""))
            #expect(events.contains { if case .raw(let type, _) = $0 { type == "response.output_item.added" } else { false } })
            #expect(events.filter { if case .usageLimits = $0 { true } else { false } }.count == 2)
            guard case .completed(let response)? = events.last else {
                Issue.record("last event: \(String(describing: events.last))")
                return
            }
            #expect(response.status == "completed")
            #expect(response.text == "You said: tell me something")
            let samples = try await setup.store.usageSamples(for: try await setup.store.account(named: AccountName("work")), since: nil, until: nil)
            #expect(Set(samples.map(\.source)) == [.headers, .stream])
            #expect(try await setup.client().send("again") == "You said: again")
        }
    }

    @Test("Workspace discovery is asked once per account and access token: two turns ask once, a refreshed token asks again")
    func discoveryKept() async throws {
        try await withSetup { setup in
            func asked() async throws -> Int { try await setup.stats().int("requests", "/backend-api/wham/accounts/check") ?? 0 }
            let client = setup.client()
            #expect(try await client.send("one") == "You said: one")
            #expect(try await asked() == 1)
            #expect(try await client.send("two") == "You said: two")
            #expect(try await asked() == 1, "kept for the same token")
            // The access token revoked: the turn gets 401, the client refreshes, and asks again.
            let stored = try await setup.store.credentials(for: try await setup.store.account(named: AccountName("work")))
            _ = try await setup.emulator.client.execute(
                setup.emulator.request(
                    "/oauth/revoke", method: .post, json: #"{"token":"\#(stored.accessToken)","token_type_hint":"access_token"}"#))
            #expect(try await client.send("three") == "You said: three")
            #expect(try await asked() == 2)
        }
    }

    @Test("A full request carries model, instructions, roles, effort and tier")
    func fullRequest() async throws {
        try await withSetup { setup in
            let request = ChappieResponseRequest(
                model: "gpt-5.2-codex", instructions: "Be brief.",
                input: [
                    ChappieInputMessage(role: .user, text: "first"), ChappieInputMessage(role: .assistant, text: "ok"),
                    ChappieInputMessage(text: "last one"),
                ],
                reasoningEffort: .high, fastMode: true)
            var text = ""
            for try await event in setup.client().streamResponse(request) { if case .textDelta(let delta) = event { text += delta } }
            #expect(text == "You said: last one")
            // On the wire (the emulator keeps the last turn's options): fast mode's tier, the explicit effort.
            let sent = try await setup.stats()
            #expect(sent.string("last_turn", "model") == "gpt-5.2-codex")
            #expect(sent.value(["last_turn", "instructions"]) as? Bool == true)
            #expect(sent.array("last_turn", "roles") as? [String] == ["user", "assistant", "user"])
            #expect(sent.string("last_turn", "reasoning_effort") == "high")
            #expect(sent.string("last_turn", "service_tier") == "priority")
            #expect(sent.array("last_turn", "tool_types")?.isEmpty == true)

            // Fast mode alone is low effort; search access is the web_search tool; a tier is sent as given.
            let fast = ChappieResponseRequest(
                input: [ChappieInputMessage(role: .developer, text: "quick")], serviceTier: "flex", allowsSearch: true, fastMode: true)
            _ = try await setup.client().streamResponse(fast).reduce(into: 0) { count, _ in count += 1 }
            let second = try await setup.stats()
            #expect(second.string("last_turn", "reasoning_effort") == "low")
            #expect(second.string("last_turn", "service_tier") == "flex")
            #expect(second.array("last_turn", "roles") as? [String] == ["developer"])
            #expect(second.array("last_turn", "tool_types") as? [String] == ["web_search"])
        }
    }

    @Test("A full window: usageLimitReached with plan, reset and windows, after the backoff's retries (docs/sdk.md)")
    func usageLimit() async throws {
        try await withSetup { setup in
            try await setup.setUsage(#"{"five_hour_used_percent":100}"#)
            do {
                _ = try await setup.client(ChappieRateLimitBackoffPolicy(maxRetries: 2, initialDelay: 0.01)).send("hi")
                Issue.record("no error")
            } catch ChappieClientError.usageLimitReached(let limit) {
                #expect(limit.type == "usage_limit_reached")
                #expect(limit.plan == .plus)
                #expect(limit.resetsAt != nil)
                #expect((limit.resetsInSeconds ?? 0) > 0)
                #expect(limit.rateLimit?.shortWindow?.usedPercent == 100)
                #expect(limit.windowName == "5-hour")
            }
            #expect(try await setup.stats().int("requests", "/backend-api/codex/responses") == 3)
            let samples = try await setup.store.usageSamples(for: try await setup.store.account(named: AccountName("work")), since: nil, until: nil)
            #expect(samples.map(\.source) == [.limitError])
            await #expect(throws: ChappieClientError.self) { _ = try await setup.client(.disabled).send("once") }
            #expect(try await setup.stats().int("requests", "/backend-api/codex/responses") == 4)
        }
    }

    @Test("response.failed, a cut stream and a malformed event fail clearly, keeping the text already delivered")
    func streamFailures() async throws {
        try await withSetup { setup in
            try await setup.fault(#"{"kind":"fail_stream"}"#)
            await #expect { _ = try await setup.client().send("x y z") } throws: { error in
                guard case ChappieClientError.responseFailed(let response) = error else { return false }
                return response.status == "failed" && response.errorCode == "server_is_overloaded" && response.text == "You "
            }
            try await setup.fault(#"{"kind":"cut_stream","after_events":4}"#)
            var delivered = ""
            do {
                for try await event in setup.client().stream("one two three four") { if case .textDelta(let d) = event { delivered += d } }
                Issue.record("no error")
            } catch ChappieClientError.responseFailed(let response) {
                #expect(response.status == "incomplete")
                #expect(response.errorCode == "stream_closed")
                #expect(response.text == delivered)
                #expect(!delivered.isEmpty)
            }
            try await setup.fault(#"{"kind":"bad_event"}"#)
            await #expect { _ = try await setup.client().send("a b c d") } throws: { error in
                guard case ChappieClientError.invalidResponse(let reason) = error else { return false }
                return reason.contains("not a JSON object")
            }
        }
    }

    @Test("429s and 5xx are retried with backoff before any output; Retry-After is honoured unless disabled; .disabled retries nothing")
    func backoff() async throws {
        try await withSetup { setup in
            let fast = ChappieRateLimitBackoffPolicy(maxRetries: 2, initialDelay: 0.2, maximumDelay: 5)
            let clock = ContinuousClock()
            try await setup.fault(#"{"kind":"status","status":503,"count":2,"path":"/backend-api/codex/responses"}"#)
            var start = clock.now
            #expect(try await setup.client(fast).send("retry me") == "You said: retry me")
            // 0.2 s, then 0.4 s.
            #expect(clock.now - start >= .milliseconds(600))

            try await setup.fault(#"{"kind":"status","status":429,"count":1,"retry_after":1,"path":"/backend-api/codex/responses"}"#)
            start = clock.now
            #expect(try await setup.client(fast).send("later") == "You said: later")
            #expect(clock.now - start >= .seconds(1))

            // Ignoring Retry-After: the computed delay is used (no wall-clock bound: a loaded machine
            // may take any time), and the request is still retried once and answered.
            var ignoring = fast
            ignoring.respectsRetryAfterHeader = false
            #expect(ignoring.delay(forAttempt: 1, retryAfter: 3) == 0.2)
            #expect(fast.delay(forAttempt: 1, retryAfter: 3) == 3)
            let before = try await setup.stats().int("requests", "/backend-api/codex/responses") ?? 0
            try await setup.fault(#"{"kind":"status","status":429,"count":1,"retry_after":3,"path":"/backend-api/codex/responses"}"#)
            #expect(try await setup.client(ignoring).send("sooner") == "You said: sooner")
            #expect(try await setup.stats().int("requests", "/backend-api/codex/responses") == before + 2)

            try await setup.fault(#"{"kind":"status","status":503,"count":1,"path":"/backend-api/codex/responses"}"#)
            await #expect { _ = try await setup.client(.disabled).send("no retry") } throws: { error in
                guard case ChappieClientError.httpError(let status, _) = error else { return false }
                return status == 503
            }
            try await setup.fault(#"{"kind":"status","status":503,"count":3,"path":"/backend-api/codex/responses"}"#)
            await #expect { _ = try await setup.client(fast).send("gives up") } throws: { error in
                if case ChappieClientError.httpError(503, _) = error { true } else { false }
            }
            #expect(ChappieRateLimitBackoffPolicy.default.delay(forAttempt: 6, retryAfter: nil) == 30)
            #expect(ChappieRateLimitBackoffPolicy.default.delay(forAttempt: 2, retryAfter: nil) == 2)
            #expect(ChappieRateLimitBackoffPolicy.default.delay(forAttempt: 1, retryAfter: 90) == 90)
        }
    }

    @Test("A 401 refreshes the token once and retries; a second 401 means signing in again")
    func unauthorizedRecovery() async throws {
        try await withSetup { setup in
            try await setup.fault(#"{"kind":"status","status":401,"count":1,"path":"/backend-api/codex/responses"}"#)
            #expect(try await setup.client().send("after 401") == "You said: after 401")
            #expect(try await setup.stats().int("refresh", "redemptions") == 1)
            try await setup.fault(#"{"kind":"status","status":401,"count":2,"path":"/backend-api/codex/responses"}"#)
            await #expect { _ = try await setup.client().send("twice") } throws: { error in
                if case ChappieClientError.reauthenticationRequired = error { true } else { false }
            }
        }
    }

    @Test("Missing and dead credentials become the matching client errors")
    func credentialErrors() async throws {
        try await withSetup { setup in
            var configuration = setup.configuration
            configuration.account = try AccountName("nobody")
            await #expect(throws: ChappieClientError.missingCredential) {
                _ = try await Chappie.client(configuration: configuration).send("hi")
            }
            let account = try await setup.store.account(named: AccountName("work"))
            try await setup.store.recordFailure(of: account, message: "refresh_token_reused", status: .reauthRequired, event: .refreshFailed)
            await #expect { _ = try await setup.client().send("hi") } throws: { error in
                if case ChappieClientError.reauthenticationRequired = error { true } else { false }
            }
            #expect(ChappieClientError.missingCredential.recovery == .signInAgain)
            #expect(ChappieClientError.httpError(status: 400, body: "").recovery == .permanent(.inspectCause))
        }
    }

    @Test("A handle streams a message or a full request as well as a prompt")
    func handles() async throws {
        try await withSetup { setup in
            let client = setup.client()
            let fromMessage = client.streamHandle(ChappieInputMessage(text: "from a message"))
            let fromRequest = client.streamHandle(ChappieResponseRequest(input: [ChappieInputMessage(text: "from a request")]))
            for (handle, text) in [(fromMessage, "from a message"), (fromRequest, "from a request")] {
                var completed: ChappieResponse?
                for try await event in handle.events { if case .completed(let response) = event { completed = response } }
                #expect(completed?.text == "You said: \(text)")
            }
        }
    }

    @Test("Cancelling a handle mid-stream ends it with CancellationError and the emulator sees the connection closed")
    func cancellation() async throws {
        try await withSetup { setup in
            try await setup.fault(#"{"kind":"slow_stream","ms":300}"#)
            let handle = setup.client().streamHandle("one two three four five six seven eight")
            var deltas = 0
            do {
                for try await event in handle.events {
                    if case .textDelta = event {
                        deltas += 1
                        handle.cancel()
                    }
                }
                Issue.record("the stream ended normally")
            } catch is CancellationError {
                // Cancelled after the first delta; a loaded machine may have a second one buffered
                // already, but never the whole reply (eight words, 300 ms apart).
                #expect((1..<8).contains(deltas))
            }
            var aborted = false
            for _ in 0..<50 {
                if try await setup.stats().int("streams_aborted") == 1 {
                    aborted = true
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(aborted)
            // Cancelling the task that iterates works the same way.
            try await setup.fault(#"{"kind":"slow_stream","ms":300}"#)
            let client = setup.client()
            let task = Task { try await client.send("slow again and again") }
            try await Task.sleep(for: .milliseconds(500))
            task.cancel()
            await #expect(throws: CancellationError.self) { _ = try await task.value }
        }
    }
}

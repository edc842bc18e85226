import Chappie
import ChappieEmulator
import ChappieNet
import ChappieStore
import ChappieTestSupport
import Foundation
import Testing

/// The client's promises of docs/sdk.md that SDK code relies on: cancellation
/// between two events, one triage for every error, token usage and raw events, Retry-After, and
/// retries of a broken stream before any output.
extension ClientTests {
    @Test("A task cancelled between two events gets CancellationError, not an ended loop that looks like a whole reply")
    func cancelledBetweenEvents() async throws {
        try await withSetup { setup in
            try await setup.fault(#"{"kind":"slow_stream","ms":200}"#)
            let client = setup.client()
            let outcome = Task { () -> (deltas: Int, error: (any Error)?) in
                var deltas = 0
                do {
                    for try await event in client.stream("one two three four five six seven eight") {
                        guard case .textDelta = event else { continue }
                        deltas += 1
                        // The consumer is between two events (not waiting in next()) when its task is cancelled.
                        if deltas == 1 { withUnsafeCurrentTask { $0?.cancel() } }
                    }
                    return (deltas, nil)
                } catch {
                    return (deltas, error)
                }
            }
            let (deltas, error) = await outcome.value
            #expect(error is CancellationError, "the loop ended with \(String(describing: error)) after \(deltas) deltas")
            #expect((1..<8).contains(deltas))
        }
    }

    @Test("A dropped connection is networkFailure (retry now), after the backoff's retries; a stream broken before any output is retried")
    func networkFailures() async throws {
        try await withSetup { setup in
            try await setup.fault(#"{"kind":"drop","count":1,"path":"/backend-api/codex/responses"}"#)
            await #expect { _ = try await setup.client(.disabled).send("dropped") } throws: { error in
                guard case ChappieClientError.networkFailure(let message) = error else { return false }
                return ChappieErrorRecovery.classify(error) == .retry(.now) && !message.isEmpty
            }
            // Cut inside the first event: nothing was delivered, so the turn is sent again over SSE.
            let before = try await setup.stats().int("requests", "/backend-api/codex/responses") ?? 0
            try await setup.fault(#"{"kind":"cut_stream","after_events":0,"count":1}"#)
            let fast = ChappieRateLimitBackoffPolicy(maxRetries: 2, initialDelay: 0.05, maximumDelay: 1)
            #expect(try await setup.client(fast).send("after a cut") == "You said: after a cut")
            #expect(try await setup.stats().int("requests", "/backend-api/codex/responses") == before + 2)
        }
    }

    @Test(".completed carries response.completed's token usage; every event is also .raw (the sum over tool rounds: HostToolTests)")
    func usageAndRawEvents() async throws {
        try await withSetup { setup in
            var events: [ChappieStreamEvent] = []
            for try await event in setup.client().stream("count my tokens") { events.append(event) }
            guard case .completed(let response)? = events.last else {
                Issue.record("last event: \(String(describing: events.last))")
                return
            }
            let usage = try #require(response.usage)
            #expect(usage.inputTokens > 0)
            #expect(usage.outputTokens > 0)
            #expect(usage.totalTokens == usage.inputTokens + usage.outputTokens)
            let raw = events.compactMap { if case .raw(let type, let payload) = $0 { (type, payload) } else { nil } }
            let deltas = events.filter { if case .textDelta = $0 { true } else { false } }
            #expect(raw.filter { $0.0 == "response.output_text.delta" }.count == deltas.count)
            #expect(raw.filter { $0.0 == "response.completed" }.count == 1)
            #expect(raw.contains { $0.0 == "response.created" })
            // The payload is the event as it came, before any parsing.
            let completed = try #require(raw.first { $0.0 == "response.completed" }?.1)
            #expect(completed.contains("\"usage\""))
        }
    }

    @Test("The fixture's response.completed reads as 12 input, 9 output, 21 tokens; nonsense counts read as 0")
    func tokenUsageFromTheWire() throws {
        let text = String(decoding: try Fixtures.data("responses-text.sse"), as: UTF8.self)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("data: ") && $0.contains("response.completed") })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst("data: ".count).utf8)) as? [String: Any])
        let usage = try #require(ChappieTokenUsage(wire: (object["response"] as? [String: Any])?["usage"]))
        #expect(usage == ChappieTokenUsage(inputTokens: 12, cachedInputTokens: 0, outputTokens: 9, reasoningTokens: 0, totalTokens: 21))
        let hostile = ChappieTokenUsage(wire: ["input_tokens": -5, "output_tokens": 1e300, "total_tokens": "many"] as [String: Any])
        #expect(hostile == ChappieTokenUsage(inputTokens: 0, outputTokens: 0, totalTokens: 0))
        #expect(ChappieTokenUsage(wire: "not an object") == nil)
        let most = ChappieTokenUsage(inputTokens: .max, totalTokens: .max)
        #expect((most + most).totalTokens == .max)
    }

    @Test("A token that expires within refreshMargin is refreshed before the request, once; outside the margin it is used as it is")
    func refreshBeforeRequest() async throws {
        var shortTokens = EmulatorConfiguration()
        shortTokens.accessTokenLifetime = .seconds(120)
        try await withSetup(shortTokens) { (setup: Setup) async throws in
            // 120 s left is within the default 5-minute margin: refreshed first.
            #expect(try await setup.client().send("fresh please") == "You said: fresh please")
            #expect(try await setup.stats().int("refresh", "redemptions") == 1)
            var configuration = setup.configuration
            configuration.refreshMargin = .seconds(30)
            configuration.streamingTransportPolicy = .httpSSEOnly
            #expect(try await Chappie.client(configuration: configuration).send("as it is") == "You said: as it is")
            #expect(try await setup.stats().int("refresh", "redemptions") == 1)
        }
    }

    @Test("An account stored without a ChatGPT account id is missingAccountID (sign in again), before anything is sent")
    func missingAccountID() async throws {
        try await withSetup { setup in
            let tokens = try await setup.emulator.signIn(email: "noid@example.com", plan: "plus")
            _ = try await setup.store.save(
                info: ChappieAccountInfo(email: "noid@example.com", userID: "user-noid", accountID: nil, plan: .plus),
                credentials: Credentials(idToken: tokens.idToken, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken),
                accessTokenExpiresAt: Date(timeIntervalSinceNow: 3600), refreshedAt: Date(), name: try AccountName("noid"), event: .signedIn)
            var configuration = setup.configuration
            configuration.account = try AccountName("noid")
            let before = try await setup.stats().int("requests", "/backend-api/codex/responses") ?? 0
            await #expect(throws: ChappieClientError.missingAccountID) { _ = try await Chappie.client(configuration: configuration).send("hi") }
            #expect(ChappieClientError.missingAccountID.recovery == .signInAgain)
            #expect(try await setup.stats().int("requests", "/backend-api/codex/responses") ?? 0 == before)
        }
    }

    @Test("A stored credential without a refresh token, whose access token needs refreshing, is missingRefreshToken; nothing is sent")
    func missingRefreshToken() async throws {
        var shortTokens = EmulatorConfiguration()
        shortTokens.accessTokenLifetime = .seconds(120)
        try await withSetup(shortTokens) { (setup: Setup) async throws in
            let tokens = try await setup.emulator.signIn(email: "norefresh@example.com", plan: "plus")
            let info = try TokenClaims(jwt: tokens.idToken).account
            _ = try await setup.store.save(
                info: info, credentials: Credentials(idToken: tokens.idToken, accessToken: tokens.accessToken, refreshToken: ""),
                accessTokenExpiresAt: Date(timeIntervalSinceNow: 60), refreshedAt: Date(), name: try AccountName("norefresh"), event: .signedIn)
            var configuration = setup.configuration
            configuration.account = try AccountName("norefresh")
            let redemptions = try await setup.stats().int("refresh", "redemptions") ?? 0
            await #expect(throws: ChappieClientError.missingRefreshToken) { _ = try await Chappie.client(configuration: configuration).send("hi") }
            #expect(try await setup.stats().int("refresh", "redemptions") ?? 0 == redemptions)
        }
    }

    @Test("Retry-After is waited out up to maximumRetryAfter, not maximumDelay; a token endpoint's 5xx keeps its Retry-After")
    func retryAfter() async throws {
        let policy = ChappieRateLimitBackoffPolicy.default
        #expect(policy.maximumRetryAfter == 300)
        #expect(policy.delay(forAttempt: 1, retryAfter: 90) == 90)
        #expect(policy.delay(forAttempt: 1, retryAfter: 3600) == 300)
        #expect(policy.delay(forAttempt: 9, retryAfter: nil) == policy.maximumDelay)
        var short = policy
        short.maximumRetryAfter = 10
        #expect(short.delay(forAttempt: 1, retryAfter: 90) == 10)

        try await withSetup { setup in
            try await setup.fault(#"{"kind":"status","status":503,"count":1,"retry_after":120,"path":"/oauth/token"}"#)
            let failure = await MainActor.run { Chappie.authSession(configuration: setup.configuration) }
            do {
                try await failure.refreshAuth()
                Issue.record("the refresh succeeded through a 503")
            } catch let error as ChappieAuthError {
                #expect(error.retryAfter == 120)
                #expect(error.recovery == .retry(.after(seconds: 120)))
                #expect(ChappieErrorRecovery.classify(error) == .retry(.after(seconds: 120)))
                #expect(error.errorDescription?.contains("Retry-After") == false)
            }
            // Without the header, the constant short wait stays.
            try await setup.fault(#"{"kind":"status","status":503,"count":1,"path":"/oauth/token"}"#)
            do {
                try await failure.refreshAuth()
                Issue.record("the refresh succeeded through a 503")
            } catch let error as ChappieAuthError {
                #expect(error.retryAfter == nil)
                #expect(error.recovery == .retry(.after(seconds: 5)))
            }
        }
    }
}

@Suite("One triage for every error the SDK throws: ChappieErrorRecovery.classify")
struct TriageTests {
    struct Unrelated: Error {}

    @Test("Each error type the SDK throws has a class; cancellation is not a failure; anything else is inspected")
    func everyErrorHasAClass() throws {
        let client: [any Error] = [
            ChappieClientError.missingCredential, ChappieClientError.networkFailure("connection lost: x"),
            ChappieClientError.httpError(status: 503, body: ""),
            ChappieClientError.usageLimitReached(
                ChappieUsageLimit(type: "usage_limit_reached", message: nil, plan: nil, resetsAt: nil, resetsInSeconds: 60, rateLimit: nil)),
        ]
        for error in client {
            #expect(ChappieErrorRecovery.classify(error) == (error as? ChappieClientError)?.recovery)
        }
        #expect(ChappieErrorRecovery.classify(ChappieAuthError.expiredDeviceCode) == .signInAgain)
        #expect(ChappieErrorRecovery.classify(ChappieAuthError.secureRandomFailed(statusCode: 1)) == .permanent(.platformLimitation))
        #expect(ChappieErrorRecovery.classify(CancellationError()) == .cancelled)
        #expect(ChappieErrorRecovery.classify(URLError(.cancelled)) == .cancelled)
        #expect(ChappieErrorRecovery.classify(URLError(.timedOut)) == .retry(.now))
        #expect(ChappieErrorRecovery.classify(Unrelated()) == .permanent(.inspectCause))
        #expect(ChappieErrorRecovery.cancelled.exitCode == 130)

        // A configured URL that cannot work is a configuration to fix, and reads as a sentence.
        #expect(throws: ChappieEndpointError.self) { try ChappieEndpoints(issuer: "ftp://x", backend: nil) }
        do {
            _ = try ChappieEndpoints(issuer: "ftp://x", backend: nil)
        } catch {
            #expect(ChappieErrorRecovery.classify(error) == .permanent(.fixConfiguration))
            #expect((error as any Error).localizedDescription.contains("absolute http(s) URL"))
        }

        // The network layer's own errors: its trust failures are described as the SDK recognises them.
        for code in [ChappieHTTPClientError.Code.certificateRejected, .untrustedFile] {
            let error = ChappieHTTPClientError(code: code, message: "x")
            #expect(ChappieTLSTrust.isTrustFailure(error.description))
            #expect(ChappieHTTPClientError.trustCode(describedBy: error.description) == code)
            #expect(ChappieErrorRecovery.classify(error) == .permanent(.fixConfiguration))
            #expect(ChappieErrorRecovery.classify(ChappieClientError.networkFailure(error.description)) == .permanent(.fixConfiguration))
            #expect(ChappieErrorRecovery.classify(ChappieAuthError.networkFailure(error.description)) == .permanent(.fixConfiguration))
        }
        #expect(ChappieErrorRecovery.classify(ChappieHTTPClientError(code: .connectionLost, message: "x")) == .retry(.now))
        #expect(!ChappieTLSTrust.isTrustFailure("connection lost: certificate rejected: x"))
    }
}

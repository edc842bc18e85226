import Chappie
import ChappieEmulator
import ChappieNet
import ChappieStore
import ChappieTestSupport
import Foundation
import Synchronization
import Testing

/// Counts a handler's calls and keeps the arguments it was given.
private final class CallLog: Sendable {
    private let calls = Mutex<[ChappieToolExecutionRequest]>([])

    func record(_ request: ChappieToolExecutionRequest) {
        calls.withLock { $0.append(request) }
    }

    var all: [ChappieToolExecutionRequest] { calls.withLock { $0 } }
}

private struct ClockArguments: Decodable {
    let zone: String
}

@Suite("Host tools: calls run by the client and answered in follow-up turns, policies, approvals, limits (docs/sdk.md)")
struct HostToolTests {
    private let tests = ClientTests()

    /// A `get_time` tool that records its calls.
    private static func clock(_ log: CallLog, policy: ChappieHostTool.Policy = .automatic) -> ChappieHostTool {
        ChappieHostTool(
            name: "get_time", description: "The time in a time zone.",
            parameters: ["type": "object", "properties": ["zone": ["type": "string"]], "required": ["zone"]], policy: policy
        ) { request in
            log.record(request)
            let arguments = try request.decodeArguments(as: ClockArguments.self)
            return "noon in \(arguments.zone)"
        }
    }

    private static func client(
        _ setup: ClientTests.Setup, tools: [ChappieHostTool], transport: ChappieStreamingTransportPolicy = .httpSSEOnly,
        limit: Int = 8, approval: ChappieToolApprovalHandler? = nil
    ) -> ChappieClient {
        var configuration = setup.configuration
        configuration.streamingTransportPolicy = transport
        configuration.webSocketReconnectDelay = .milliseconds(5)
        configuration.hostTools = tools
        configuration.toolLoopLimit = limit
        configuration.toolApprovalHandler = approval
        return Chappie.client(configuration: configuration)
    }

    /// Collects every event, and the error the stream ended with.
    private static func events(_ client: ChappieClient, _ prompt: String = "what time is it?") async -> ([ChappieStreamEvent], (any Error)?) {
        var events: [ChappieStreamEvent] = []
        do {
            for try await event in client.stream(prompt) { events.append(event) }
            return (events, nil)
        } catch {
            return (events, error)
        }
    }

    private static func text(_ events: [ChappieStreamEvent]) -> String {
        events.compactMap { if case .textDelta(let delta) = $0 { delta } else { nil } }.joined()
    }

    /// The tool events in order, as short strings: `requested:get_time`, `approval:get_time`, `completed:get_time:completed`.
    private static func toolSteps(_ events: [ChappieStreamEvent]) -> [String] {
        events.compactMap { event in
            switch event {
            case .toolCallRequested(let request): "requested:\(request.name)"
            case .approvalRequested(let approval): "approval:\(approval.request.name)"
            case .toolCallCompleted(let result): "completed:\(result.request.name):\(result.status.rawValue)"
            default: nil
            }
        }
    }

    @Test(
        "An automatic tool runs, its output goes back in a follow-up turn, and the model's answer quotes it",
        arguments: [ChappieStreamingTransportPolicy.httpSSEOnly, .default])
    func automaticTool(transport: ChappieStreamingTransportPolicy) async throws {
        try await tests.withSetup { setup in
            try await setup.script(#"{"name":"get_time","arguments":"{\"zone\":\"Europe/Paris\"}"}"#)
            let log = CallLog()
            let client = Self.client(setup, tools: [Self.clock(log)], transport: transport)
            let (events, error) = await Self.events(client)
            #expect(error == nil)
            #expect(Self.toolSteps(events) == ["requested:get_time", "completed:get_time:completed"])
            guard case .toolCallRequested(let request)? = events.first(where: { if case .toolCallRequested = $0 { true } else { false } }),
                case .toolCallCompleted(let result)? = events.first(where: { if case .toolCallCompleted = $0 { true } else { false } })
            else {
                Issue.record("no tool events: \(events)")
                return
            }
            #expect(request.policy == .automatic)
            #expect(request.callID.hasPrefix("call_"))
            #expect(result.request == request)
            #expect(result.output == "noon in Europe/Paris")
            #expect(log.all.map(\.arguments) == [#"{"zone":"Europe/Paris"}"#])
            #expect(Self.text(events) == "The tool get_time returned: noon in Europe/Paris")
            guard case .completed(let response)? = events.last else {
                Issue.record("last: \(String(describing: events.last))")
                return
            }
            #expect(response.text == "The tool get_time returned: noon in Europe/Paris")
            // The usage is both turns' together: the sum of the two response.completed events' (each delivered once as .raw).
            let turns = events.compactMap { event -> Int? in
                guard case .raw("response.completed", let payload) = event,
                    let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
                    let usage = (object["response"] as? [String: Any])?["usage"] as? [String: Any]
                else { return nil }
                return usage["total_tokens"] as? Int
            }
            #expect(turns.count == 2)
            #expect(turns.allSatisfy { $0 > 0 })
            #expect(response.usage?.totalTokens == turns.reduce(0, +))
            let stats = try await setup.stats()
            #expect(stats.int("tool_scripts", "calls_issued") == 1)
            #expect(stats.int("tool_scripts", "outputs_accepted") == 1)
            #expect(stats.int("tool_scripts", "outputs_refused") == 0)
            #expect(stats.array("tool_scripts", "last_declared_tools") as? [String] == ["get_time"])
            if transport == .default {
                #expect(stats.int("websocket", "turns") == 2)  // the call and its answer, a socket each
                #expect(client.activeTransport == .webSocket)
            }
        }
    }

    @Test("Several rounds: each call is answered before the next; the rounds stop when the model answers")
    func severalRounds() async throws {
        try await tests.withSetup { setup in
            try await setup.script(#"{"name":"get_time","arguments":"{\"zone\":\"UTC\"}","rounds":3}"#)
            let log = CallLog()
            let (events, error) = await Self.events(Self.client(setup, tools: [Self.clock(log)], limit: 3))
            #expect(error == nil)
            #expect(log.all.count == 3)
            #expect(Set(log.all.map(\.callID)).count == 3)
            #expect(Self.toolSteps(events).count == 6)
            #expect(Self.text(events) == "The tool get_time returned: noon in UTC")
        }
    }

    @Test("A model that never stops calling tools ends in toolLoopLimitExceeded(limit), after exactly `limit` rounds")
    func loopLimit() async throws {
        try await tests.withSetup { setup in
            try await setup.script(#"{"name":"get_time","arguments":"{\"zone\":\"UTC\"}","forever":true}"#)
            let log = CallLog()
            let (events, error) = await Self.events(Self.client(setup, tools: [Self.clock(log)], limit: 2))
            #expect((error as? ChappieClientError) == .toolLoopLimitExceeded(2))
            #expect(log.all.count == 2)
            #expect(Self.toolSteps(events).filter { $0.hasPrefix("requested") }.count == 2)
            #expect(!events.contains { if case .completed = $0 { true } else { false } })
            #expect(try await setup.stats().int("tool_scripts", "calls_issued") == 3)
        }
    }

    @Test("The default loop limit is 8")
    func defaultLimit() {
        #expect(ChappieConfiguration().toolLoopLimit == 8)
    }

    @Test("A call to a tool that is not registered throws toolNotRegistered(name) before any tool event")
    func unknownTool() async throws {
        try await tests.withSetup { setup in
            try await setup.script(#"{"name":"format_disk"}"#)
            let log = CallLog()
            let (events, error) = await Self.events(Self.client(setup, tools: [Self.clock(log)]))
            #expect((error as? ChappieClientError) == .toolNotRegistered("format_disk"))
            #expect(Self.toolSteps(events).isEmpty)
            #expect(log.all.isEmpty)
        }
    }

    @Test("An .ask tool emits approvalRequested and runs once approved; `remember` skips the question for later calls")
    func approved() async throws {
        try await tests.withSetup { setup in
            let log = CallLog()
            let asked = CallLog()
            let client = Self.client(setup, tools: [Self.clock(log, policy: .ask)]) { approval in
                asked.record(approval.request)
                return .approved(remember: true)
            }
            try await setup.script(#"{"name":"get_time","arguments":"{\"zone\":\"UTC\"}"}"#)
            let (first, firstError) = await Self.events(client)
            #expect(firstError == nil)
            #expect(Self.toolSteps(first) == ["requested:get_time", "approval:get_time", "completed:get_time:completed"])
            guard case .approvalRequested(let approval)? = first.first(where: { if case .approvalRequested = $0 { true } else { false } }) else {
                return
            }
            #expect(approval.toolDescription == "The time in a time zone.")
            #expect(approval.request.policy == .ask)
            try await setup.script(#"{"name":"get_time","arguments":"{\"zone\":\"Asia/Tokyo\"}"}"#)
            let (second, secondError) = await Self.events(client, "and in Tokyo?")
            #expect(secondError == nil)
            #expect(Self.toolSteps(second) == ["requested:get_time", "completed:get_time:completed"])
            #expect(asked.all.count == 1)
            #expect(log.all.count == 2)
        }
    }

    @Test(
        "A denied call reports a denied result, then throws toolDenied(name, reason); the handler never runs",
        arguments: [
            ("ask-denied", "not now"), ("ask-denied-without-reason", ChappieApprovalDecision.defaultDenialReason),
            ("ask-without-handler", "no toolApprovalHandler is registered to approve it"),
            ("deny", "the tool's policy is deny"),
        ])
    func denied(case name: String, reason: String) async throws {
        try await tests.withSetup { setup in
            try await setup.script(#"{"name":"get_time","arguments":"{\"zone\":\"UTC\"}"}"#)
            let log = CallLog()
            let client =
                switch name {
                case "ask-denied": Self.client(setup, tools: [Self.clock(log, policy: .ask)]) { _ in .denied("not now") }
                // As docs/sdk.md allows: `.denied()` with no reason.
                case "ask-denied-without-reason": Self.client(setup, tools: [Self.clock(log, policy: .ask)]) { _ in .denied() }
                case "ask-without-handler": Self.client(setup, tools: [Self.clock(log, policy: .ask)])
                default: Self.client(setup, tools: [Self.clock(log, policy: .deny)])
                }
            let (events, error) = await Self.events(client)
            #expect((error as? ChappieClientError) == .toolDenied("get_time", reason))
            #expect(Self.toolSteps(events).last == "completed:get_time:denied")
            guard case .toolCallCompleted(let result)? = events.last else {
                Issue.record("last: \(String(describing: events.last))")
                return
            }
            #expect(result.output == reason)
            #expect(result.duration == .zero)
            #expect(log.all.isEmpty)
        }
    }

    @Test("A handler that throws reports a failed result with its message, then toolFailed(name, message)")
    func failingHandler() async throws {
        struct Broken: LocalizedError { var errorDescription: String? { "the clock is broken" } }
        try await tests.withSetup { setup in
            try await setup.script(#"{"name":"get_time","arguments":"not json"}"#)
            let tool = ChappieHostTool(name: "get_time", description: "The time.") { _ in throw Broken() }
            let (events, error) = await Self.events(Self.client(setup, tools: [tool]))
            #expect((error as? ChappieClientError) == .toolFailed("get_time", "the clock is broken"))
            #expect(Self.toolSteps(events) == ["requested:get_time", "completed:get_time:failed"])
        }
    }

    @Test("Arguments the model wrote badly fail the call through the handler's decoding, not the stream's parsing")
    func malformedArguments() async throws {
        try await tests.withSetup { setup in
            try await setup.script(#"{"name":"get_time","arguments":"{\"zone\":"}"#)
            let log = CallLog()
            let (events, error) = await Self.events(Self.client(setup, tools: [Self.clock(log)]))
            guard case .toolFailed(let name, _)? = error as? ChappieClientError else {
                Issue.record("error: \(String(describing: error))")
                return
            }
            #expect(name == "get_time")
            #expect(log.all.map(\.arguments) == [#"{"zone":"#])
            #expect(Self.toolSteps(events).last == "completed:get_time:failed")
        }
    }

    @Test("Cancelling while a tool runs reports a cancelled result, then the stream throws CancellationError", arguments: [false, true])
    func cancelDuringTool(waitingForApproval: Bool) async throws {
        try await tests.withSetup { setup in
            try await setup.script(#"{"name":"get_time","arguments":"{\"zone\":\"UTC\"}"}"#)
            let started = AsyncStream.makeStream(of: Void.self)
            let slow = ChappieHostTool(name: "get_time", description: "Slow.", policy: waitingForApproval ? .ask : .automatic) { _ in
                started.continuation.yield()
                try await Task.sleep(for: .seconds(600))
                return "never"
            }
            var configuration = setup.configuration
            configuration.streamingTransportPolicy = .httpSSEOnly
            configuration.hostTools = [slow]
            configuration.toolApprovalHandler = { _ in
                started.continuation.yield()
                try? await Task.sleep(for: .seconds(600))
                return .approved()
            }
            let handle = Chappie.client(configuration: configuration).streamHandle("what time is it?")
            let canceller = Task {
                var waits = started.stream.makeAsyncIterator()
                _ = await waits.next()
                handle.cancel()
            }
            var steps: [String] = []
            var thrown: (any Error)?
            do {
                for try await event in handle.events {
                    steps += Self.toolSteps([event])
                }
            } catch {
                thrown = error
            }
            await canceller.value
            #expect(thrown is CancellationError)
            #expect(steps.last == "completed:get_time:cancelled")
            #expect(steps.first == "requested:get_time")
        }
    }

    @Test(
        "A call awaiting an approval handler that ignores cancellation ends at once when the stream is cancelled: .cancelled, then CancellationError")
    func cancelWhileAwaitingApproval() async throws {
        try await tests.withSetup { setup in
            try await setup.script(#"{"name":"get_time","arguments":"{\"zone\":\"UTC\"}"}"#)
            let tool = ChappieHostTool(name: "get_time", description: "The time.", policy: .ask) { _ in "never asked" }
            var configuration = setup.configuration
            configuration.streamingTransportPolicy = .httpSSEOnly
            configuration.hostTools = [tool]
            configuration.toolApprovalHandler = { _ in
                // A person who never answers, in a task the stream's cancellation does not reach.
                await Task.detached { try? await Task.sleep(for: .seconds(30)) }.value
                return .approved()
            }
            let handle = Chappie.client(configuration: configuration).streamHandle("what time is it?")
            var steps: [String] = []
            var thrown: (any Error)?
            do {
                for try await event in handle.events {
                    steps += Self.toolSteps([event])
                    // The prompt is shown from the event; the user then stops the stream.
                    if case .approvalRequested = event { handle.cancel() }
                }
            } catch {
                thrown = error
            }
            #expect(thrown is CancellationError)
            #expect(steps == ["requested:get_time", "approval:get_time", "completed:get_time:cancelled"])
        }
    }

    @Test("A WebSocket dropped in the middle of a tool-call turn is replayed: the tool runs once")
    func dropDuringCallTurn() async throws {
        try await tests.withSetup { setup in
            try await setup.script(#"{"name":"get_time","arguments":"{\"zone\":\"UTC\"}"}"#)
            try await setup.fault(#"{"kind":"drop_socket","after_events":2}"#)
            let log = CallLog()
            let (events, error) = await Self.events(Self.client(setup, tools: [Self.clock(log)], transport: .default))
            #expect(error == nil)
            #expect(log.all.count == 1)
            #expect(Self.toolSteps(events) == ["requested:get_time", "completed:get_time:completed"])
            let stats = try await setup.stats()
            #expect(stats.int("websocket", "turns") == 3)
            #expect(stats.int("tool_scripts", "calls_issued") == 1)
        }
    }

    @Test("A replay that calls with another call_id (and its events at other positions) runs only the call of the attempt that completed")
    func divergentReplayOfCall() async throws {
        try await tests.withSetup { setup in
            try await setup.script(#"{"name":"get_time","arguments":"{\"zone\":\"UTC\"}"}"#)
            try await setup.fault(#"{"kind":"drop_socket","after_events":4,"divergent":true}"#)
            let log = CallLog()
            let (events, error) = await Self.events(Self.client(setup, tools: [Self.clock(log)], transport: .default))
            #expect(error == nil)
            #expect(log.all.count == 1)
            #expect(Self.toolSteps(events) == ["requested:get_time", "completed:get_time:completed"])
            let stats = try await setup.stats()
            #expect(stats.int("tool_scripts", "calls_issued") == 2)  // the dropped attempt's call, then the replay's
            #expect(stats.int("tool_scripts", "outputs_accepted") == 1)
            #expect(stats.int("tool_scripts", "outputs_refused") == 0)
        }
    }

    @Test("The real-shaped tool-call stream (fixture) is parsed: its call runs and its call_id is answered")
    func fixtureToolCall() async throws {
        try await tests.withSetup { setup in
            let toolCall = String(decoding: try Fixtures.data("responses-tool-call.sse"), as: UTF8.self)
            let text = String(decoding: try Fixtures.data("responses-text.sse"), as: UTF8.self)
            for body in [toolCall, text] {
                let fault = try JSONSerialization.data(withJSONObject: [
                    "kind": "status", "status": 200, "body": body, "path": "/backend-api/codex/responses",
                ])
                try await setup.fault(String(decoding: fault, as: UTF8.self))
            }
            let log = CallLog()
            let (events, error) = await Self.events(Self.client(setup, tools: [Self.clock(log)]))
            #expect(error == nil)
            #expect(log.all.map(\.callID) == ["call_fixture_1"])
            #expect(log.all.map(\.arguments) == [#"{"zone":"Europe/Paris"}"#])
            #expect(Self.toolSteps(events) == ["requested:get_time", "completed:get_time:completed"])
            #expect(!Self.text(events).isEmpty)
        }
    }

    @Test("A function_call item without a call_id ends the stream with invalidResponse; no tool runs")
    func callWithoutID() async throws {
        try await tests.withSetup { setup in
            let body = """
                event: response.created
                data: {"type":"response.created","response":{"id":"resp_bad","status":"in_progress"}}

                event: response.output_item.done
                data: {"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","name":"get_time","arguments":"{}"}}

                event: response.completed
                data: {"type":"response.completed","response":{"id":"resp_bad","status":"completed"}}


                """
            try await setup.emulator.failNext("/backend-api/codex/responses", status: 200, body: body)
            let log = CallLog()
            let (events, error) = await Self.events(Self.client(setup, tools: [Self.clock(log)]))
            guard case .invalidResponse(let reason)? = error as? ChappieClientError else {
                Issue.record("error: \(String(describing: error))")
                return
            }
            #expect(reason.contains("call_id"))
            #expect(log.all.isEmpty)
            #expect(Self.toolSteps(events).isEmpty)
        }
    }

    @Test("Tool names the API refuses, or given twice, are a configuration error before anything is sent")
    func invalidNames() async throws {
        try await tests.withSetup { setup in
            let log = CallLog()
            for tools in [[ChappieHostTool(name: "get time", description: "") { _ in "" }], [Self.clock(log), Self.clock(log)]] {
                let (_, error) = await Self.events(Self.client(setup, tools: tools))
                guard case .invalidConfiguration? = error as? ChappieClientError else {
                    Issue.record("error: \(String(describing: error))")
                    continue
                }
            }
            let stats = try await setup.stats()
            #expect(stats.int("requests", "/backend-api/codex/responses") == nil)
            #expect(ChappieHostTool.isValidName("get_time-2"))
            #expect(!ChappieHostTool.isValidName(""))
            #expect(!ChappieHostTool.isValidName(String(repeating: "a", count: 65)))
            #expect(!ChappieHostTool.isValidName("é"))
        }
    }
}

@Suite("The client's store: opened once per client")
struct ClientStoreTests {
    @Test(
        "After a client's first request its store stays open: a key file gone since does not stop it; a new client fails with credentialStoreUnavailable"
    )
    func opensOnce() async throws {
        try await ClientTests().withSetup { setup in
            let client = setup.client()
            #expect(try await client.send("one") == "You said: one")
            let keyFile = setup.configuration.store.location.defaultKeyFile
            let saved = try Data(contentsOf: keyFile)
            try FileManager.default.removeItem(at: keyFile)
            defer { _ = FileManager.default.createFile(atPath: keyFile.path, contents: saved, attributes: [.posixPermissions: 0o600]) }
            #expect(try await client.send("two") == "You said: two")
            do {
                _ = try await setup.client().send("three")
                Issue.record("a new client opened the store without its key")
            } catch {
                guard case .credentialStoreUnavailable(let message)? = error as? ChappieClientError else {
                    Issue.record("\(error)")
                    return
                }
                #expect(!message.isEmpty)
                #expect((error as? ChappieClientError)?.recovery == .permanent(.fixConfiguration))
            }
        }
    }
}

extension ClientTests.Setup {
    /// Queues a scripted tool call on the emulator.
    func script(_ json: String) async throws {
        let reply = try await emulator.client.execute(emulator.request("/_emulator/tools/script", method: .post, json: json))
        #expect(reply.status == 201)
    }
}

import Foundation

/// One event of a streamed reply: the SSE `event:` name and its JSON `data:`, which is also the
/// WebSocket text frame (docs/protocol.md §8.1, §8.2).
struct StreamEvent: Sendable {
    var type: String
    var data: String

    /// A delta cut off mid-JSON (the `bad_event` fault).
    static let truncatedDelta = StreamEvent(type: "response.output_text.delta", data: #"{"type":"response.output_text.delta","delta":"#)

    /// The event as one SSE frame.
    var serverSentEvent: String { "event: \(type)\ndata: \(data)\n\n" }
}

/// The events of one reply, in the real service's order: created, item added, text deltas (a word
/// each), `codex.rate_limits`, item done, completed with usage.
struct ReplyEvents {
    let model: String
    let text: String
    let inputCharacters: Int
    let account: EmulatedAccount?
    /// The text cut after each space, as a model streams words.
    private let words: [String]
    private let responseID = "resp_" + Self.identifier()
    private let itemID = "msg_" + Self.identifier()
    private let created = Int(Date().timeIntervalSince1970)

    init(model: String, text: String, inputCharacters: Int, account: EmulatedAccount?) {
        self.model = model
        self.text = text
        self.inputCharacters = inputCharacters
        self.account = account
        var words: [String] = []
        var word = ""
        for character in text {
            word.append(character)
            if character == " " {
                words.append(word)
                word = ""
            }
        }
        if !word.isEmpty { words.append(word) }
        self.words = words
    }

    /// The input and output tokens the reply's usage reports: a token per four characters of the
    /// prompt (at least one), and one per word streamed.
    var tokens: (input: Int, output: Int) { (max(1, inputCharacters / 4), words.count) }

    /// The whole successful reply.
    func events() -> [StreamEvent] {
        var events = opening() + words.map(delta)
        if let account { events.append(rateLimits(account)) }
        events.append(
            event(
                "response.output_item.done",
                [
                    ("output_index", .int(0)),
                    (
                        "item",
                        .object([
                            ("type", .string("message")), ("id", .string(itemID)), ("role", .string("assistant")),
                            ("content", .array([.object([("type", .string("output_text")), ("text", .string(text))])])),
                        ])
                    ),
                ]))
        events.append(completed(usage: tokens))
        return events
    }

    /// A turn that calls a tool instead of answering: the `function_call` item added, its arguments
    /// in `argumentDeltas` deltas, the item done (where clients read whole calls, §8.1), usage, completed.
    func functionCallEvents(callID: String, name: String, arguments: String, argumentDeltas: Int = 1) -> [StreamEvent] {
        let itemID = "fc_" + Self.identifier()
        func item(_ arguments: String) -> JSON {
            .object([
                ("type", .string("function_call")), ("id", .string(itemID)), ("call_id", .string(callID)),
                ("name", .string(name)), ("arguments", .string(arguments)),
            ])
        }
        let characters = Array(arguments)
        let size = max(1, (characters.count + argumentDeltas - 1) / max(1, argumentDeltas))
        let pieces = stride(from: 0, to: max(characters.count, 1), by: size).map { String(characters[$0..<min($0 + size, characters.count)]) }
        var events = [
            event("response.created", [("response", response(status: "in_progress"))]),
            event("response.output_item.added", [("output_index", .int(0)), ("item", item(""))]),
        ]
        events += pieces.map {
            event("response.function_call_arguments.delta", [("item_id", .string(itemID)), ("output_index", .int(0)), ("delta", .string($0))])
        }
        events.append(event("response.output_item.done", [("output_index", .int(0)), ("item", item(arguments))]))
        if let account { events.append(rateLimits(account)) }
        // As the service does, a turn that calls a tool reports its usage too: the arguments are its output.
        events.append(completed(usage: (tokens.input, max(1, arguments.count / 4))))
        return events
    }

    /// `response.completed` with the turn's usage (§8.1).
    private func completed(usage: (input: Int, output: Int)) -> StreamEvent {
        event(
            "response.completed",
            [
                (
                    "response",
                    response(
                        status: "completed",
                        extra: [
                            (
                                "usage",
                                .object([
                                    ("input_tokens", .int(usage.input)),
                                    ("input_tokens_details", .object([("cached_tokens", .int(0))])),
                                    ("output_tokens", .int(usage.output)),
                                    ("output_tokens_details", .object([("reasoning_tokens", .int(0))])),
                                    ("total_tokens", .int(usage.input + usage.output)),
                                ])
                            )
                        ])
                )
            ])
    }

    /// A warm-up (`"generate": false`, §8.2): created and completed, no output, nothing charged.
    static func warmUp(model: String) -> [StreamEvent] {
        let reply = ReplyEvents(model: model, text: "", inputCharacters: 0, account: nil)
        return [
            reply.event("response.created", [("response", reply.response(status: "in_progress"))]),
            reply.event(
                "response.completed",
                [
                    (
                        "response",
                        reply.response(
                            status: "completed",
                            extra: [
                                ("usage", .object([("input_tokens", .int(0)), ("output_tokens", .int(0)), ("total_tokens", .int(0))]))
                            ])
                    )
                ]),
        ]
    }

    /// One delta, then `response.failed` with `server_is_overloaded`.
    func failedEvents() -> [StreamEvent] {
        opening() + [delta(words.first ?? text)] + [
            event(
                "response.failed",
                [
                    (
                        "response",
                        response(
                            status: "failed",
                            extra: [
                                (
                                    "error",
                                    .object([
                                        ("type", .string("server_error")), ("code", .string("server_is_overloaded")),
                                        ("message", .string("The model is at capacity.")),
                                    ])
                                )
                            ])
                    )
                ])
        ]
    }

    private func opening() -> [StreamEvent] {
        [
            event("response.created", [("response", response(status: "in_progress"))]),
            event(
                "response.output_item.added",
                [
                    ("output_index", .int(0)),
                    (
                        "item",
                        .object([("type", .string("message")), ("id", .string(itemID)), ("role", .string("assistant")), ("content", .array([]))])
                    ),
                ]),
        ]
    }

    private func rateLimits(_ account: EmulatedAccount) -> StreamEvent {
        func window(_ window: EmulatedAccount.Window) -> JSON {
            .object([
                ("used_percent", .double(window.usedPercent)), ("window_minutes", .int(window.seconds / 60)), ("reset_at", .int(window.resetAt)),
            ])
        }
        let limits: [(String, JSON)] =
            account.hasWeeklyOnly
            ? [("primary", window(account.weekly))]
            : [("primary", window(account.fiveHour)), ("secondary", window(account.weekly))]
        return event(
            "codex.rate_limits",
            [
                ("plan_type", .string(account.plan)),
                ("rate_limits", .object(limits)),
                ("credits", .object([("has_credits", .bool(false)), ("unlimited", .bool(false)), ("balance", .string("0"))])),
            ])
    }

    private func response(status: String, extra: [(String, JSON)] = []) -> JSON {
        .object(
            [
                ("id", .string(responseID)), ("object", .string("response")), ("created_at", .int(created)),
                ("status", .string(status)), ("model", .string(model)),
            ] + extra)
    }

    private func delta(_ text: String) -> StreamEvent {
        event(
            "response.output_text.delta",
            [
                ("item_id", .string(itemID)), ("output_index", .int(0)), ("content_index", .int(0)), ("delta", .string(text)),
            ])
    }

    private func event(_ type: String, _ members: [(String, JSON)]) -> StreamEvent {
        StreamEvent(type: type, data: String(decoding: JSON.object([("type", .string(type))] + members).serialized(), as: UTF8.self))
    }

    private static func identifier() -> String {
        String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(24).lowercased())
    }
}

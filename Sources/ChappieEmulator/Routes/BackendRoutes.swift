import Foundation

/// The ChatGPT backend's endpoints (chatgpt.com/backend-api): usage (§6.1) and responses (§8.1).
struct BackendRoutes: Sendable {
    let state: EmulatorState

    /// Checks `Authorization: Bearer` and `ChatGPT-Account-Id`; returns the account or the refusal.
    func authenticate(authorization: String?, accountHeader: String?) async -> Result<EmulatedAccount, ReplyError> {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else {
            return .failure(ReplyError(.openAIError(401, message: "Missing bearer token.", code: "missing_authorization")))
        }
        let token = String(authorization.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
        switch await state.authenticate(bearer: token) {
        case .invalid:
            return .failure(ReplyError(.openAIError(401, message: "Your authentication token is not valid.", code: "token_invalidated")))
        case .expired:
            return .failure(ReplyError(.openAIError(401, message: "Your authentication token has expired.", code: "token_expired")))
        case .account(let account):
            if let accountHeader, accountHeader != account.accountID {
                return .failure(ReplyError(.openAIError(403, message: "ChatGPT-Account-Id does not match the token.", code: "account_mismatch")))
            }
            return .success(account)
        }
    }

    /// `GET /backend-api/wham/accounts/check`: workspace routing discovery (docs/protocol.md,
    /// "Workspace routing"). One entry, the token's account, in the list form, with where its
    /// Responses requests go: `origin` (the emulator's own) unless the account was given another.
    func accountCheck(account: EmulatedAccount, origin: String) -> Reply {
        let entry = JSON.object([
            ("id", .string(account.accountID)),
            ("name", .string(account.email)),
            ("plan_type", .string(account.plan)),
            ("structure", .string("personal")),
            ("workspace_backend_origin", .string(account.workspaceOrigin ?? origin)),
            ("account_routing_override", .string(account.routingOverride)),
            ("account_user_role", .string("account-owner")),
            ("can_access_with_session", .bool(true)),
        ])
        return .json(
            200,
            .object([
                ("accounts", .array([entry])),
                ("account_ordering", .array([.string(account.accountID)])),
                ("default_account_id", .string(account.accountID)),
            ]))
    }

    /// `GET /backend-api/wham/profiles/me`: the account's token history as Codex's `/usage` view
    /// reads it (docs/protocol.md §6), built from the turns this emulator served: a bucket per UTC
    /// day that had any, oldest first.
    func profile(account: EmulatedAccount) async -> Reply {
        let (days, turns) = await state.tokenHistory(accountID: account.accountID)
        let buckets = days.map { JSON.object([("start_date", .string($0.day)), ("tokens", .int($0.tokens))]) }
        return .json(
            200,
            .object([
                (
                    "stats",
                    .object([
                        ("lifetime_tokens", .int(days.reduce(0) { $0 + $1.tokens })),
                        ("peak_daily_tokens", .int(days.map(\.tokens).max() ?? 0)),
                        ("daily_usage_buckets", .array(buckets)),
                        ("total_threads", .int(turns)),
                    ])
                ),
                ("metadata", .object([("stats_as_of", .string(Date().formatted(.iso8601)))])),
            ]))
    }

    /// `GET /backend-api/wham/rate-limit-reset-credits`: the account's banked resets, in the shape
    /// third-party clients read (docs/protocol.md, "Reset credits"): `{available_count, credits:
    /// [{id, status, reset_type, title, granted_at, expires_at}]}`, times ISO 8601.
    func resetCredits(account: EmulatedAccount) -> Reply {
        let now = Int(Date().timeIntervalSince1970)
        func time(_ seconds: Int) -> JSON { .string(Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)) }
        let credits = account.resetCredits.map { credit in
            JSON.object([
                ("id", .string(credit.id)), ("status", .string(credit.expiresAt <= now && credit.status == "available" ? "expired" : credit.status)),
                ("reset_type", .string("codex_rate_limits")), ("title", .string("Full reset (Weekly + 5 hr)")),
                ("granted_at", time(credit.grantedAt)), ("expires_at", time(credit.expiresAt)),
            ])
        }
        let available = account.resetCredits.filter { $0.status == "available" && $0.expiresAt > now }.count
        return .json(200, .object([("available_count", .int(available)), ("credits", .array(credits))]))
    }

    /// `POST /backend-api/wham/rate-limit-reset-credits/consume` with `{redeem_request_id, credit_id?}`:
    /// `{"outcome": "reset" | "nothing_to_reset" | "no_credit" | "already_redeemed"}`; 400 without an id.
    func consumeResetCredit(account: EmulatedAccount, body: Data) async -> Reply {
        guard case .object(let fields)? = try? JSONDecoder().decode(JSONInput.self, from: body),
            case .string(let requestID)? = fields["redeem_request_id"], !requestID.isEmpty
        else {
            return .openAIError(400, message: "redeem_request_id is required.", code: "invalid_request")
        }
        let creditID: String? = if case .string(let id)? = fields["credit_id"] { id } else { nil }
        let outcome = await state.consumeResetCredit(accountID: account.accountID, creditID: creditID, requestID: requestID)
        return .json(200, .object([("outcome", .string(outcome))]))
    }

    /// `GET /backend-api/wham/usage`: the account's windows in `RateLimitStatusPayload` shape.
    func usage(account: EmulatedAccount) -> Reply {
        let now = Int(Date().timeIntervalSince1970)
        func window(_ window: EmulatedAccount.Window) -> JSON {
            .object([
                ("used_percent", .int(Int(window.usedPercent.rounded()))),
                ("limit_window_seconds", .int(window.seconds)),
                ("reset_after_seconds", .int(max(0, window.resetAt - now))),
                ("reset_at", .int(window.resetAt)),
            ])
        }
        let primary = account.hasWeeklyOnly ? account.weekly : account.fiveHour
        return .json(
            200,
            .object([
                ("plan_type", .string(account.plan)),
                (
                    "rate_limit",
                    .object([
                        ("allowed", .bool(!account.limitReached)),
                        ("limit_reached", .bool(account.limitReached)),
                        ("primary_window", window(primary)),
                        ("secondary_window", account.hasWeeklyOnly ? .null : window(account.weekly)),
                    ])
                ),
                ("credits", .object([("has_credits", .bool(false)), ("unlimited", .bool(false)), ("balance", .string("0"))])),
                ("additional_rate_limits", .null),
                ("rate_limit_reached_type", account.limitReached ? .object([("type", .string("rate_limit_reached"))]) : .null),
            ]))
    }

    /// `POST /backend-api/codex/responses`: an SSE stream, or 429 once a window is full (§7.1).
    func responses(account: EmulatedAccount, body: Data, fault: Fault.Kind?) async -> Reply {
        let turn: Turn
        switch await startTurn(account: account, body: body) {
        case .success(let started): turn = started
        case .failure(let refusal): return refusal.reply
        }
        var events = turn.events
        var cutAfter: Int?
        var pause = 0.0
        if case .endlessLine(let bytes)? = fault {
            // No line break ever: a client that buffers a line whole grows without bound.
            let chunk = min(bytes, 64 << 10)
            return Reply(
                status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")],
                body: .drip(count: bytes / chunk, size: chunk, interval: .zero, state: state))
        }
        switch fault {
        case .cutStream(let afterEvents)?: cutAfter = afterEvents
        case .slowStream(let seconds)?: pause = seconds
        case .badEvent? where events.count > 2: events[2] = .truncatedDelta
        case .failStream?: events = turn.failedEvents
        default: break
        }
        let requestID = "req_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(24).lowercased()
        return Reply(
            status: 200,
            headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
                + rateLimitHeaders(turn.account) + [("x-request-id", requestID), ("openai-model", turn.model)],
            body: .events(events.map(\.serverSentEvent), cutAfter: cutAfter, pause: pause, state: state))
    }

    /// A turn the account may run: its model and its events, the account charged for it.
    struct Turn {
        let model: String
        let account: EmulatedAccount
        let events: [StreamEvent]
        /// The events of the same turn failing after one delta (`response.failed`, server_is_overloaded).
        let failedEvents: [StreamEvent]
    }

    /// Checks a `ResponsesApiRequest` body (§8.1) and the account's plan and windows; charges the
    /// account and returns the turn, or the reply that refuses it (400, 429).
    func startTurn(account: EmulatedAccount, body: Data, rewordedReplay: Bool = false) async -> Result<Turn, ReplyError> {
        guard let request = try? JSONDecoder().decode(JSONInput.self, from: body), case .object(let fields) = request else {
            return .failure(ReplyError(.openAIError(400, message: "The request body must be a JSON object.", code: "invalid_request")))
        }
        guard case .bool(true)? = fields["stream"] else {
            return .failure(ReplyError(.openAIError(400, message: "stream must be true.", code: "invalid_request")))
        }
        guard case .string(let model)? = fields["model"] else {
            return .failure(ReplyError(.openAIError(400, message: "model is required.", code: "invalid_request")))
        }
        await state.recordTurnOptions(fields)
        var continuing = false
        if case .string(let previous)? = fields["previous_response_id"], !previous.isEmpty { continuing = true }
        var step = await state.toolStep(
            for: fields["input"], conversation: fields["prompt_cache_key"], tools: fields["tools"], continuing: continuing)
        if rewordedReplay, case .call(let callID, _, _)? = step {
            step = await state.reissueToolCall(for: fields["input"], conversation: fields["prompt_cache_key"], replacing: callID)
        }
        if case .refuse(let message)? = step {
            return .failure(
                ReplyError(
                    .json(
                        400,
                        .object([
                            (
                                "error",
                                .object([
                                    ("message", .string(message)), ("type", .string("invalid_request_error")), ("param", .string("input")),
                                    ("code", .null),
                                ])
                            )
                        ]))))
        }
        guard account.codexIncluded else {
            return .failure(
                ReplyError(
                    .json(
                        429,
                        .object([
                            (
                                "error",
                                .object([
                                    ("type", .string("usage_not_included")),
                                    ("message", .string("Codex is not included in your plan.")),
                                    ("plan_type", .string(account.plan)),
                                ])
                            )
                        ]))))
        }
        if let reached = account.reachedWindow {
            let now = Int(Date().timeIntervalSince1970)
            return .failure(
                ReplyError(
                    .json(
                        429,
                        .object([
                            (
                                "error",
                                .object([
                                    ("type", .string("usage_limit_reached")),
                                    ("message", .string("The usage limit has been reached")),
                                    ("plan_type", .string(account.plan)),
                                    ("resets_at", .int(reached.resetAt)),
                                    ("eligible_promo", .null),
                                    ("resets_in_seconds", .int(max(0, reached.resetAt - now))),
                                ])
                            )
                        ]), headers: rateLimitHeaders(account) + [("x-codex-active-limit", "codex")])))
        }
        guard let charged = await state.charge(accountID: account.accountID) else {
            return .failure(ReplyError(.openAIError(401, message: "Unknown account.", code: "token_invalidated")))
        }
        let prompt = lastUserText(fields["input"])
        var text = prompt.map { "You said: \($0)" } ?? "Hello from the chappie emulator."
        if case .answer(let answer)? = step { text = answer }
        if rewordedReplay { text = text.replacingOccurrences(of: "You said", with: "You sent") }
        let generator = ReplyEvents(model: model, text: text, inputCharacters: prompt?.count ?? 0, account: charged)
        await state.recordTokens(accountID: account.accountID, tokens: generator.tokens.input + generator.tokens.output)
        var events = generator.events()
        if case .call(let callID, let name, let arguments)? = step {
            // A divergent replay streams the arguments in two deltas: its events fall at other positions.
            events = generator.functionCallEvents(callID: callID, name: name, arguments: arguments, argumentDeltas: rewordedReplay ? 2 : 1)
        }
        return .success(Turn(model: model, account: charged, events: events, failedEvents: generator.failedEvents()))
    }

    /// The `x-codex-*` rate-limit headers of §6.2.
    func rateLimitHeaders(_ account: EmulatedAccount) -> [(String, String)] {
        var headers: [(String, String)] = []
        let windows = account.hasWeeklyOnly ? [("primary", account.weekly)] : [("primary", account.fiveHour), ("secondary", account.weekly)]
        for (name, window) in windows {
            headers.append(("x-codex-\(name)-used-percent", String(format: "%.1f", window.usedPercent)))
            headers.append(("x-codex-\(name)-window-minutes", String(window.seconds / 60)))
            headers.append(("x-codex-\(name)-reset-at", String(window.resetAt)))
        }
        headers.append(("x-codex-credits-has-credits", "False"))
        headers.append(("x-codex-credits-unlimited", "False"))
        headers.append(("x-codex-credits-balance", "0"))
        headers.append(("x-codex-plan-type", account.plan))
        return headers
    }

    /// The text of the last user message in `input`, if any.
    private func lastUserText(_ input: JSONInput?) -> String? {
        guard case .array(let items)? = input else { return nil }
        for item in items.reversed() {
            guard case .object(let message) = item, case .string("user")? = message["role"] else { continue }
            switch message["content"] {
            case .string(let text)?:
                return text
            case .array(let parts)?:
                let texts = parts.compactMap { part -> String? in
                    guard case .object(let fields) = part, case .string(let text)? = fields["text"] else { return nil }
                    return text
                }
                if !texts.isEmpty { return texts.joined(separator: "\n") }
            default:
                continue
            }
        }
        return nil
    }
}

/// A reply that ends a route early, such as a failed authentication.
struct ReplyError: Error {
    let reply: Reply
    init(_ reply: Reply) { self.reply = reply }
}

extension BackendRoutes {
    /// `GET /backend-api/codex/models?client_version=…`: the model list in the `ModelsResponse` shape
    /// the Codex CLI reads (`{"models":[ModelInfo…]}`, docs/protocol.md §8.1, §8.3).
    func models() -> Reply {
        func model(_ slug: String, _ name: String, _ description: String, priority: Int) -> JSON {
            .object([
                ("slug", .string(slug)), ("display_name", .string(name)), ("description", .string(description)),
                ("default_reasoning_level", .string("medium")),
                (
                    "supported_reasoning_levels",
                    .array(
                        ["low", "medium", "high"].map { effort in
                            .object([("effort", .string(effort)), ("description", .string("\(effort.capitalized) reasoning effort"))])
                        })
                ),
                ("shell_type", .string("shell_command")), ("visibility", .string("list")), ("supported_in_api", .bool(true)),
                ("priority", .int(priority)), ("upgrade", .null),
                ("base_instructions", .string("You are a coding agent running in the chappie emulator.")),
                ("supports_reasoning_summaries", .bool(true)), ("support_verbosity", .bool(false)), ("default_verbosity", .null),
                ("apply_patch_tool_type", .string("freeform")),
                ("truncation_policy", .object([("mode", .string("bytes")), ("limit", .int(10_000))])),
                ("supports_parallel_tool_calls", .bool(false)), ("context_window", .int(272_000)),
                ("effective_context_window_percent", .int(95)), ("experimental_supported_tools", .array([])),
                ("input_modalities", .array([.string("text"), .string("image")])),
            ])
        }
        return .json(
            200,
            .object([
                (
                    "models",
                    .array([
                        model("gpt-5-codex", "GPT-5 Codex", "Optimized for coding tasks (emulated).", priority: 1),
                        model("gpt-5", "GPT-5", "General-purpose model (emulated).", priority: 2),
                    ])
                )
            ]), headers: [("x-models-etag", "\"chappie-emulator-1\"")])
    }
}

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
        return .json(200, .object([
            ("plan_type", .string(account.plan)),
            ("rate_limit", .object([
                ("allowed", .bool(!account.limitReached)),
                ("limit_reached", .bool(account.limitReached)),
                ("primary_window", window(primary)),
                ("secondary_window", account.hasWeeklyOnly ? .null : window(account.weekly)),
            ])),
            ("credits", .object([("has_credits", .bool(false)), ("unlimited", .bool(false)), ("balance", .string("0"))])),
            ("additional_rate_limits", .null),
            ("rate_limit_reached_type", account.limitReached ? .object([("type", .string("rate_limit_reached"))]) : .null),
        ]))
    }

    /// `POST /backend-api/codex/responses`: an SSE stream, or 429 once a window is full (§7.1).
    func responses(account: EmulatedAccount, body: Data, fault: Fault.Kind?) async -> Reply {
        guard let request = try? JSONDecoder().decode(JSONInput.self, from: body), case .object(let fields) = request else {
            return .openAIError(400, message: "The request body must be a JSON object.", code: "invalid_request")
        }
        guard case .bool(true)? = fields["stream"] else {
            return .openAIError(400, message: "stream must be true.", code: "invalid_request")
        }
        guard case .string(let model)? = fields["model"] else {
            return .openAIError(400, message: "model is required.", code: "invalid_request")
        }
        guard account.codexIncluded else {
            return .json(429, .object([("error", .object([
                ("type", .string("usage_not_included")),
                ("message", .string("Codex is not included in your plan.")),
                ("plan_type", .string(account.plan)),
            ]))]))
        }
        if let reached = account.reachedWindow {
            let now = Int(Date().timeIntervalSince1970)
            return .json(429, .object([("error", .object([
                ("type", .string("usage_limit_reached")),
                ("message", .string("The usage limit has been reached")),
                ("plan_type", .string(account.plan)),
                ("resets_at", .int(reached.resetAt)),
                ("eligible_promo", .null),
                ("resets_in_seconds", .int(max(0, reached.resetAt - now))),
            ]))]), headers: rateLimitHeaders(account) + [("x-codex-active-limit", "codex")])
        }
        guard let charged = await state.charge(accountID: account.accountID) else {
            return .openAIError(401, message: "Unknown account.", code: "token_invalidated")
        }
        var frames = events(model: model, prompt: lastUserText(fields["input"]), account: charged, fault: fault)
        var cutAfter: Int?
        var pause = 0.0
        switch fault {
        case .cutStream(let afterEvents)?: cutAfter = afterEvents
        case .slowStream(let seconds)?: pause = seconds
        case .badEvent? where frames.count > 2: frames[2] = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\n\n"
        default: break
        }
        let requestID = "req_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(24).lowercased()
        return Reply(
            status: 200,
            headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
                + rateLimitHeaders(charged) + [("x-request-id", requestID), ("openai-model", model)],
            body: .events(frames, cutAfter: cutAfter, pause: pause, state: state))
    }

    /// The `x-codex-*` rate-limit headers of §6.2.
    private func rateLimitHeaders(_ account: EmulatedAccount) -> [(String, String)] {
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

    /// The SSE frames of one streamed reply (§8.1), in the real event order.
    private func events(model: String, prompt: String?, account: EmulatedAccount, fault: Fault.Kind?) -> [String] {
        let responseID = "resp_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(24).lowercased()
        let itemID = "msg_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(24).lowercased()
        let created = Int(Date().timeIntervalSince1970)
        let text = prompt.map { "You said: \($0)" } ?? "Hello from the chappie emulator."
        var deltas: [String] = []
        var word = ""
        for character in text {
            word.append(character)
            if character == " " {
                deltas.append(word)
                word = ""
            }
        }
        if !word.isEmpty { deltas.append(word) }

        func response(status: String, extra: [(String, JSON)] = []) -> JSON {
            .object([
                ("id", .string(responseID)), ("object", .string("response")), ("created_at", .int(created)),
                ("status", .string(status)), ("model", .string(model)),
            ] + extra)
        }
        func frame(_ type: String, _ members: [(String, JSON)]) -> String {
            let data = JSON.object([("type", .string(type))] + members).serialized()
            return "event: \(type)\ndata: \(String(decoding: data, as: UTF8.self))\n\n"
        }
        func delta(_ text: String) -> String {
            frame("response.output_text.delta", [
                ("item_id", .string(itemID)), ("output_index", .int(0)), ("content_index", .int(0)), ("delta", .string(text)),
            ])
        }

        var frames = [
            frame("response.created", [("response", response(status: "in_progress"))]),
            frame("response.output_item.added", [
                ("output_index", .int(0)),
                ("item", .object([("type", .string("message")), ("id", .string(itemID)), ("role", .string("assistant")), ("content", .array([]))])),
            ]),
        ]
        if case .failStream? = fault {
            frames.append(delta(deltas.first ?? text))
            frames.append(frame("response.failed", [("response", response(status: "failed", extra: [
                ("error", .object([
                    ("type", .string("server_error")), ("code", .string("server_is_overloaded")),
                    ("message", .string("The model is at capacity.")),
                ])),
            ]))]))
            return frames
        }
        frames += deltas.map(delta)
        func window(_ window: EmulatedAccount.Window) -> JSON {
            .object([("used_percent", .double(window.usedPercent)), ("window_minutes", .int(window.seconds / 60)), ("reset_at", .int(window.resetAt))])
        }
        let limits: [(String, JSON)] = account.hasWeeklyOnly
            ? [("primary", window(account.weekly))]
            : [("primary", window(account.fiveHour)), ("secondary", window(account.weekly))]
        frames.append(frame("codex.rate_limits", [
            ("plan_type", .string(account.plan)),
            ("rate_limits", .object(limits)),
            ("credits", .object([("has_credits", .bool(false)), ("unlimited", .bool(false)), ("balance", .string("0"))])),
        ]))
        frames.append(frame("response.output_item.done", [
            ("output_index", .int(0)),
            ("item", .object([
                ("type", .string("message")), ("id", .string(itemID)), ("role", .string("assistant")),
                ("content", .array([.object([("type", .string("output_text")), ("text", .string(text))])])),
            ])),
        ]))
        let inputTokens = max(1, (prompt?.count ?? 0) / 4)
        frames.append(frame("response.completed", [("response", response(status: "completed", extra: [
            ("usage", .object([
                ("input_tokens", .int(inputTokens)),
                ("input_tokens_details", .object([("cached_tokens", .int(0))])),
                ("output_tokens", .int(deltas.count)),
                ("output_tokens_details", .object([("reasoning_tokens", .int(0))])),
                ("total_tokens", .int(inputTokens + deltas.count)),
            ])),
        ]))]))
        return frames
    }
}

/// A reply that ends a route early, such as a failed authentication.
struct ReplyError: Error {
    let reply: Reply
    init(_ reply: Reply) { self.reply = reply }
}

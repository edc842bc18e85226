import Foundation

/// The emulator's own API under `/_emulator/`: approve device codes, set usage, inject faults, count.
struct ControlRoutes: Sendable {
    let state: EmulatorState

    /// `POST /_emulator/device/approve` with `{"user_code","email"?,"plan"?,"account_id"?,"user_id"?,"fedramp"?}`.
    func approve(_ fields: RequestFields?) async -> Reply {
        guard let fields, let userCode = fields.string("user_code") else {
            return .openAIError(400, message: "user_code is required.", code: "invalid_request")
        }
        do {
            let account = try await state.approve(
                userCode: userCode, email: fields.string("email"), plan: fields.string("plan"),
                accountID: fields.string("account_id"), userID: fields.string("user_id"),
                isFedRAMP: fields.bool("fedramp") ?? false)
            return .json(200, describe(account))
        } catch .unknownCode {
            return .openAIError(404, message: "No device code has that user code.", code: "not_found")
        } catch {
            return .openAIError(410, message: "That device code has expired.", code: "expired")
        }
    }

    /// `POST /_emulator/authorize/deny` with `{"error"?,"error_description"?}`: the next browser
    /// sign-in (`/oauth/authorize`) is refused, redirecting with `error` (default `access_denied`).
    func denyNextAuthorization(_ fields: RequestFields?) async -> Reply {
        await state.denyNextAuthorization(
            error: fields?.string("error") ?? "access_denied",
            description: fields?.string("error_description") ?? "The user denied the authorization request.")
        return .empty(204)
    }

    /// `POST /_emulator/device/deny` with `{"user_code","reason"?}`: the user refuses the code; its
    /// polls answer 403 `deviceauth_authorization_denied` from then on.
    func deny(_ fields: RequestFields?) async -> Reply {
        guard let fields, let userCode = fields.string("user_code") else {
            return .openAIError(400, message: "user_code is required.", code: "invalid_request")
        }
        do {
            try await state.deny(userCode: userCode, reason: fields.string("reason") ?? "The user denied the authorization request.")
            return .empty(204)
        } catch .unknownCode {
            return .openAIError(404, message: "No device code has that user code.", code: "not_found")
        } catch {
            return .openAIError(410, message: "That device code has expired.", code: "expired")
        }
    }

    /// `POST /_emulator/device/next` with `{"email"?,"plan"?,"account_id"?,"user_id"?}`: the identity the
    /// next auto-approved device code signs in as (an existing account with that id or e-mail signs in again).
    func queueApproval(_ fields: RequestFields?) async -> Reply {
        guard let fields else { return .openAIError(400, message: "Body must be a JSON object.", code: "invalid_request") }
        await state.queueApproval(
            email: fields.string("email"), plan: fields.string("plan"), accountID: fields.string("account_id"), userID: fields.string("user_id"))
        return .empty(204)
    }

    /// `GET /_emulator/accounts`.
    func accounts() async -> Reply {
        .json(200, .array(await state.allAccounts().map(describe)))
    }

    /// `POST /_emulator/accounts/{id}/usage` with `{"five_hour_used_percent"?,"weekly_used_percent"?,"plan"?,"codex_included"?,
    /// "limit_after_turns"?}`; `limit_after_turns: K` serves K more turns, then fills the 5-hour window.
    func setUsage(accountID: String, _ fields: RequestFields?) async -> Reply {
        guard let fields else { return .openAIError(400, message: "Body must be a JSON object.", code: "invalid_request") }
        var turns: Int?
        if let value = fields.number("limit_after_turns") {
            guard value.isFinite, value >= 0, value <= 1_000_000, value == value.rounded() else {
                return .openAIError(400, message: "limit_after_turns must be a whole number from 0 to 1000000.", code: "invalid_request")
            }
            turns = Int(value)
        }
        guard
            let account = await state.setUsage(
                accountID: accountID, fiveHour: fields.number("five_hour_used_percent"), weekly: fields.number("weekly_used_percent"),
                plan: fields.string("plan"), codexIncluded: fields.bool("codex_included"), limitAfterTurns: turns)
        else {
            return .openAIError(404, message: "No such account.", code: "not_found")
        }
        return .json(200, describe(account))
    }

    /// `POST /_emulator/accounts/ID/reset-credits` with `{"count": N}` (1 to 20): banked resets.
    func grantResetCredits(accountID: String, _ fields: RequestFields?) async -> Reply {
        guard let count = fields?.number("count").flatMap({ $0.isFinite && abs($0) < 1e6 ? Int($0) : nil }), (1...20).contains(count) else {
            return .openAIError(400, message: "count must be 1 to 20.", code: "invalid_request")
        }
        guard let account = await state.grantResetCredits(accountID: accountID, count: count) else {
            return .openAIError(404, message: "No such account.", code: "not_found")
        }
        return .json(200, describe(account))
    }

    /// `POST /_emulator/accounts/ID/routing` with `{"override": "NO_CONSTRAINT"|"us"|"us_cr",
    /// "origin"?: "https://HOST:PORT"}`: what `wham/accounts/check` says of the account.
    func setRouting(accountID: String, _ fields: RequestFields?) async -> Reply {
        guard let fields, let override = fields.string("override"), ["NO_CONSTRAINT", "us", "us_cr"].contains(override) else {
            return .openAIError(400, message: "override must be NO_CONSTRAINT, us or us_cr.", code: "invalid_request")
        }
        // A pinned region without an origin of its own is served by the second listener.
        if fields.values["origin"] != nil, fields.string("origin") == nil {
            return .openAIError(400, message: "origin must be a string.", code: "invalid_request")
        }
        var origin = fields.string("origin")
        if origin == nil, override != "NO_CONSTRAINT" {
            guard let regional = await state.regionalOrigin else {
                return .openAIError(409, message: "No second listener (start with --tls), and no origin given.", code: "no_regional_listener")
            }
            origin = regional
        }
        if let origin {
            guard let url = URL(string: origin), url.scheme == "https", url.host != nil, url.path.isEmpty, url.query == nil, url.user == nil,
                url.port.map({ (1...65535).contains($0) }) ?? true
            else {
                return .openAIError(400, message: "origin must be a bare https origin (https://HOST[:PORT]).", code: "invalid_request")
            }
        }
        guard let account = await state.setRouting(accountID: accountID, override: override, origin: origin) else {
            return .openAIError(404, message: "No such account.", code: "not_found")
        }
        return .json(200, describe(account))
    }

    /// `POST /_emulator/faults` with `{"kind", "count"?, "path"?, …}`; see docs/emulator.md.
    func addFault(_ fields: RequestFields?) async -> Reply {
        guard let fields, let kindName = fields.string("kind") else {
            return .openAIError(400, message: "kind is required.", code: "invalid_request")
        }
        let kind: Fault.Kind
        var path = fields.string("path")
        switch kindName {
        case "status":
            guard let status = fields.number("status"), (100...599).contains(Int(status)) else {
                return .openAIError(400, message: "status (100-599) is required.", code: "invalid_request")
            }
            kind = .status(
                Int(status), body: fields.string("body"),
                retryAfter: fields.string("retry_after") ?? fields.number("retry_after").map { String(Int($0)) })
        case "latency":
            guard let milliseconds = fields.number("ms"), milliseconds >= 0 else {
                return .openAIError(400, message: "ms is required.", code: "invalid_request")
            }
            kind = .latency(milliseconds / 1000)
        case "hold":
            kind = .hold
        case "malformed":
            kind = .malformed
        case "truncated":
            kind = .truncated
        case "drop":
            kind = .drop
        case "cut_stream":
            kind = .cutStream(afterEvents: Int(fields.number("after_events") ?? 2))
            path = path ?? "/backend-api/codex/responses"
        case "fail_stream":
            kind = .failStream
            path = path ?? "/backend-api/codex/responses"
        case "slow_stream":
            kind = .slowStream((fields.number("ms") ?? 200) / 1000)
            path = path ?? "/backend-api/codex/responses"
        case "bad_event":
            kind = .badEvent
            path = path ?? "/backend-api/codex/responses"
        case "endless_line":
            let bytes = fields.number("bytes") ?? Double(32 << 20)
            guard bytes >= 1, bytes <= Double(1 << 40) else {
                return .openAIError(400, message: "bytes must be 1 to 2^40.", code: "invalid_request")
            }
            kind = .endlessLine(bytes: Int(bytes))
            path = path ?? "/backend-api/codex/responses"
        case "refuse_upgrade":
            let status = Int(fields.number("status") ?? 404)
            guard (400...599).contains(status) else { return .openAIError(400, message: "status must be 400-599.", code: "invalid_request") }
            kind = .refuseUpgrade(status)
        case "drop_socket":
            kind = .dropSocket(afterEvents: Int(fields.number("after_events") ?? 4), divergent: fields.bool("divergent") ?? false)
        case "binary_frame":
            kind = .binaryFrame(afterEvents: Int(fields.number("after_events") ?? 3))
        case "connection_limit":
            kind = .connectionLimit
        default:
            return .openAIError(
                400,
                message:
                    "kind must be status, latency, hold, malformed, truncated, drop, cut_stream, fail_stream, slow_stream, bad_event, endless_line, "
                    + "refuse_upgrade, drop_socket, binary_frame or connection_limit.",
                code: "invalid_request")
        }
        let count = Int(fields.number("count") ?? 1)
        guard count >= 1 else { return .openAIError(400, message: "count must be at least 1.", code: "invalid_request") }
        await state.addFault(Fault(kind: kind, pathPrefix: path, remaining: count))
        return .json(201, .object([("kind", .string(kindName)), ("count", .int(count)), ("path", path.map(JSON.string) ?? .null)]))
    }

    /// `POST /_emulator/tools/script` with `{"name", "arguments"?, "rounds"?, "forever"?}`: the next
    /// turn calls the tool `name` with `arguments` (a JSON string, sent as is; `{}` by default); each
    /// answer with its output gets another call until `rounds` (default 1) are done, or forever.
    func queueToolScript(_ fields: RequestFields?) async -> Reply {
        guard let fields, let name = fields.string("name"), !name.isEmpty else {
            return .openAIError(400, message: "name is required.", code: "invalid_request")
        }
        let rounds = fields.number("rounds").map(Int.init) ?? 1
        guard rounds >= 1 else { return .openAIError(400, message: "rounds must be at least 1.", code: "invalid_request") }
        let forever = fields.bool("forever") ?? false
        let arguments = fields.string("arguments") ?? "{}"
        await state.queueToolScript(ToolScripts.Script(name: name, arguments: arguments, rounds: forever ? nil : rounds))
        return .json(
            201,
            .object([
                ("name", .string(name)), ("arguments", .string(arguments)), ("rounds", forever ? .null : .int(rounds)),
            ]))
    }

    /// `DELETE /_emulator/tools/script`: drops the queued scripts.
    func clearToolScripts() async -> Reply {
        await state.clearToolScripts()
        return .empty(204)
    }

    /// `DELETE /_emulator/faults`.
    func clearFaults() async -> Reply {
        await state.clearFaults()
        return .empty(204)
    }

    /// `GET /_emulator/stats`.
    func stats() async -> Reply {
        .json(200, await state.stats())
    }

    /// `GET /_emulator/drip?chunks=N&size=B&interval_ms=M`: a slow body, for timeout and cancellation tests.
    func drip(query: [String: String]) -> Reply {
        let chunks = query["chunks"].flatMap(Int.init) ?? 10
        let size = query["size"].flatMap(Int.init) ?? 1
        let interval = query["interval_ms"].flatMap(Int.init) ?? 100
        guard (1...100_000).contains(chunks), (1...1_048_576).contains(size), (0...60_000).contains(interval) else {
            return .openAIError(400, message: "chunks, size or interval_ms out of range.", code: "invalid_request")
        }
        return Reply(
            status: 200, headers: [("Content-Type", "application/octet-stream")],
            body: .drip(count: chunks, size: size, interval: .milliseconds(interval), state: state))
    }

    private func describe(_ account: EmulatedAccount) -> JSON {
        .object([
            ("account_id", .string(account.accountID)),
            ("user_id", .string(account.userID)),
            ("email", .string(account.email)),
            ("plan", .string(account.plan)),
            ("fedramp", .bool(account.isFedRAMP)),
            ("codex_included", .bool(account.codexIncluded)),
            ("five_hour_used_percent", .double(account.fiveHour.usedPercent)),
            ("weekly_used_percent", .double(account.weekly.usedPercent)),
            ("routing_override", .string(account.routingOverride)),
            ("workspace_origin", account.workspaceOrigin.map { .string($0) } ?? .null),
            ("turns_before_limit", account.turnsBeforeLimit.map { .int($0) } ?? .null),
        ])
    }
}

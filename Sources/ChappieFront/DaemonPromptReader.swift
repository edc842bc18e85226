import ChappieSystem
import ChappieText
import Glibc

/// `chappie prompt` from a running daemon's `usage` reply, as the full binary's `prompt` reads it
/// (`DaemonReply` with its accounts and their newest readings, dates in seconds) and renders it
/// (``PromptText``, shared). Used only when no name, `$CHAPPIE_ACCOUNT` or directory binding
/// chooses the account: the line is the active account's.
package enum DaemonPromptReader {
    /// What the reply came to.
    package enum Outcome: Equatable, Sendable {
        /// The line, or `nil` for none (no active account): the full binary prints nothing then.
        case line(String?)
        /// Anything else (no daemon, a refusal, a reply this reader does not take as surely as the
        /// full binary's decoder): the full binary asks again, or reads the store.
        case full
    }

    /// How long the daemon may take, as the full binary's `prompt` allows it.
    static let timeoutMilliseconds = 500

    /// Asks the daemon at `path`; the line is rendered at `now()` once the reply is in, as the full
    /// binary renders it after its reply.
    static func ask(format: String, socket path: String, now: () -> Double) -> Outcome {
        let start = now()
        guard
            case .reply(let answer) = DaemonSocketExchange.exchange(
                Array(#"{"command":"usage"}"#.utf8), socket: path, timeoutMilliseconds: timeoutMilliseconds)
        else { return .full }
        let line = outcome(reply: answer, format: format, now: now(), clock: PromptText.localClock)
        // A reply so large that reading it took most of the full binary's 2 seconds: its to decide
        // (it gives a prompt up after them).
        return now() - start > budgetSeconds ? .full : line
    }

    /// How long the front binary may spend on a line before the full binary's budget is at risk.
    static let budgetSeconds = 1.5

    /// The line a reply gives; fuzzed against the full binary's decoder and `PromptLine`
    /// (`front-reader`).
    package static func outcome(
        reply bytes: [UInt8], format: String, now: Double, clock: (_ seconds: Double, _ withDay: Bool) -> String
    ) -> Outcome {
        guard let reply = Members(JSONValue.parse(bytes), ["ok", "error", "exitCode", "accounts", "usage"]),
            reply.required("ok", \.bool) == true, reply.optional("error", \.string) != nil, reply.optional("exitCode", \.int32) != nil,
            case .array(let accountValues)? = reply["accounts"]
        else { return .full }
        var accounts: [PromptAccount] = []
        for value in accountValues {
            guard let account = PromptAccount(value) else { return .full }
            accounts.append(account)
        }
        var readings: [Int64: PromptReading] = [:]
        switch reply["usage"] {
        case nil, .null?: break
        case .array(let pairs)?:
            // A dictionary keyed by row id is a flat array of id, reading, id, reading… (the last
            // of an id counts, as the decoder keeps it).
            guard pairs.count % 2 == 0 else { return .full }
            for index in stride(from: 0, to: pairs.count, by: 2) {
                guard let id = pairs[index].int64, let reading = PromptReading(pairs[index + 1]) else { return .full }
                readings[id] = reading
            }
        default: return .full
        }
        guard let account = accounts.first(where: \.isActive) else { return .line(nil) }
        let window = readings[account.id].flatMap(\.binding).map { binding in
            PromptText.Window(isShort: binding.isShort, usedPercent: binding.window.usedPercent, resetsAt: binding.window.resetsAt)
        }
        let line = PromptText.render(
            format, account: account.name, plan: account.plan.map { PlanName.display(raw: $0) }, reserve: account.reservePercent,
            window: window, now: now, clock: clock)
        return .line(line)
    }

    /// An account as `Account` decodes it: every member it requires, of its type; the few the line uses kept.
    private struct PromptAccount {
        let id: Int64
        let name: String
        let plan: String?
        let reservePercent: Double?
        let isActive: Bool

        init?(_ value: JSONValue) {
            guard
                let members = Members(
                    value,
                    [
                        "id", "uuid", "name", "info", "status", "accessTokenExpiresAt", "lastRefreshAt", "lastError", "codexHome",
                        "reservePercent", "createdAt", "updatedAt", "isActive", "maxLeases", "autoSwitch", "priority",
                    ]),
                let id = members.required("id", \.int64), let uuid = members.required("uuid", \.string), UUIDText.isUUID(uuid, lowercaseOnly: false),
                let name = members.required("name", \.string), FrontRequest.isAccountName(name),
                let status = members.required("status", \.string), ["ok", "reauth_required", "disabled"].contains(status),
                members.optional("accessTokenExpiresAt", \.number) != nil, members.optional("lastRefreshAt", \.number) != nil,
                members.optional("lastError", \.string) != nil, members.optional("codexHome", \.string) != nil,
                let reserve = members.optional("reservePercent", \.number), members.required("createdAt", \.number) != nil,
                members.required("updatedAt", \.number) != nil, let isActive = members.required("isActive", \.bool),
                members.required("maxLeases", \.int64) != nil,
                // Absent from the replies of a daemon older than them (issue 41).
                members.optional("autoSwitch", \.bool) != nil, members.optional("priority", \.int64) != nil,
                let info = Members(members["info"], ["email", "userID", "accountID", "plan", "isFedRAMPAccount"]),
                info.optional("email", \.string) != nil, info.optional("userID", \.string) != nil,
                info.optional("accountID", \.string) != nil, let plan = info.optional("plan", \.string),
                info.required("isFedRAMPAccount", \.bool) != nil
            else { return nil }
            self.id = id
            self.name = name
            self.plan = plan
            self.reservePercent = reserve
            self.isActive = isActive
        }
    }

    /// A window as `ChappieUsageWindow` decodes it (its use clamped to 0–100).
    private struct PromptWindow: Equatable {
        let usedPercent: Double
        let minutes: Int64?
        let resetsAt: Double?

        init?(_ value: JSONValue) {
            guard let members = Members(value, ["usedPercent", "windowMinutes", "resetsAt"]),
                let used = members.required("usedPercent", \.number), let minutes = members.optional("windowMinutes", \.int64),
                let resetsAt = members.optional("resetsAt", \.number),
                // A time Foundation would format from another instant than its whole second, or
                // outside 1970–9999: the full binary's to show.
                resetsAt.map({ $0 == $0.rounded(.towardZero) && $0 >= 0 && $0 <= AccessTokenClaims.latestExpiry }) ?? true
            else { return nil }
            usedPercent = min(100, max(0, used))
            self.minutes = minutes
            self.resetsAt = resetsAt
        }
    }

    /// A reading (`UsageSample` and its snapshot) and its binding window, by ``HeadroomRule``.
    private struct PromptReading {
        let binding: (window: PromptWindow, isShort: Bool)?

        init?(_ value: JSONValue) {
            guard let sample = Members(value, ["accountID", "observedAt", "source", "limitID", "snapshot"]),
                sample.required("accountID", \.int64) != nil, sample.required("observedAt", \.number) != nil,
                let source = sample.required("source", \.string), ["poll", "headers", "stream", "limit_error"].contains(source),
                sample.required("limitID", \.string) != nil,
                let snapshot = Members(
                    sample["snapshot"],
                    ["limitID", "limitName", "plan", "shortWindow", "longWindow", "credits", "limitReached", "rateLimitReachedType"]),
                snapshot.required("limitID", \.string) != nil, snapshot.optional("limitName", \.string) != nil,
                snapshot.optional("plan", \.string) != nil, snapshot.required("limitReached", \.bool) != nil,
                snapshot.optional("rateLimitReachedType", \.string) != nil,
                let short = snapshot.optional("shortWindow", PromptWindow.init), let long = snapshot.optional("longWindow", PromptWindow.init)
            else { return nil }
            if let credits = snapshot["credits"], credits != .null {
                guard let members = Members(credits, ["hasCredits", "unlimited", "balance"]), members.required("hasCredits", \.bool) != nil,
                    members.required("unlimited", \.bool) != nil, members.optional("balance", \.string) != nil
                else { return nil }
            }
            switch (short, long) {
            case (let short?, let long?):
                let fiveHourBinds = HeadroomRule.fiveHourBinds(
                    fiveHourUsed: short.usedPercent, fiveHourResetsAt: short.resetsAt, weeklyUsed: long.usedPercent, weeklyResetsAt: long.resetsAt)
                let window = fiveHourBinds ? short : long
                // A weekly window equal to the 5-hour one is named `5h`, as the full binary names it.
                binding = (window, window == short)
            case (let short?, nil): binding = (short, true)
            case (nil, let long?): binding = (long, false)
            case (nil, nil): binding = nil
            }
        }
    }
}

public import ChappieCore
public import Foundation

/// The daemon's answer: one JSON object on one line.
public struct DaemonReply: Codable, Sendable {
    /// A token and what goes with it. Prints redacted.
    package struct Token: Codable, Sendable, RedactedDescription {
        /// The account's name.
        package var name: String
        /// The access token.
        package var accessToken: String
        /// Its expiry.
        package var expiresAt: Date?
        /// The ChatGPT account id.
        package var chatgptAccountID: String?
        /// Whether the account is FedRAMP.
        package var fedramp: Bool
        /// Set when the token is still valid but its refresh failed for now (see
        /// ``TokenService/token(for:margin:)``).
        package var warning: String?

        /// Creates a token payload.
        package init(name: String, accessToken: String, expiresAt: Date?, chatgptAccountID: String?, fedramp: Bool, warning: String? = nil) {
            self.name = name
            self.accessToken = accessToken
            self.expiresAt = expiresAt
            self.chatgptAccountID = chatgptAccountID
            self.fedramp = fedramp
            self.warning = warning
        }

        /// Everything but the token.
        package var redactedFields: KeyValuePairs<String, String> {
            [
                "name": name, "accessToken": redactedMarker, "expiresAt": expiresAt.map { "\($0)" } ?? "nil",
                "chatgptAccountID": chatgptAccountID ?? "nil", "fedramp": "\(fedramp)", "warning": warning ?? "nil",
            ]
        }
    }

    /// The daemon's own state.
    public struct Status: Codable, Sendable {
        /// Its process id.
        public var pid: Int32
        /// When it started.
        public var startedAt: Date
        /// The last successful refresh and poll.
        public var lastRefreshAt: Date?, lastPollAt: Date?
        /// Counters since start.
        public var refreshes: Int, refreshFailures: Int, polls: Int, pollFailures: Int, switches: Int
        /// Accounts waiting after failures, with when they are tried again.
        public var backingOff: [String: Date]
        /// Where the dashboard is served (`http://ADDRESS/`), when the daemon has `--http`.
        public var dashboard: String?

        package init(
            pid: Int32, startedAt: Date, lastRefreshAt: Date?, lastPollAt: Date?, refreshes: Int, refreshFailures: Int, polls: Int,
            pollFailures: Int, switches: Int, backingOff: [String: Date], dashboard: String?
        ) {
            self.pid = pid
            self.startedAt = startedAt
            self.lastRefreshAt = lastRefreshAt
            self.lastPollAt = lastPollAt
            self.refreshes = refreshes
            self.refreshFailures = refreshFailures
            self.polls = polls
            self.pollFailures = pollFailures
            self.switches = switches
            self.backingOff = backingOff
            self.dashboard = dashboard
        }
    }

    /// Whether the request worked.
    public var ok: Bool
    /// Why not.
    public var error: String?
    /// The exit code the CLI should use for the failure.
    public var exitCode: Int32?
    /// For `token`.
    package var token: Token?
    /// For `status`.
    public var status: Status?
    /// For `status`, `accounts` and `usage`: the accounts.
    public var accounts: [Account]?
    /// For `usage`: each account's newest reading, by row id.
    public var usage: [Int64: UsageSample]?
    /// For `metrics`: Prometheus text.
    public var metrics: String?

    package init(
        ok: Bool, error: String? = nil, exitCode: Int32? = nil, token: Token? = nil, status: Status? = nil, accounts: [Account]? = nil,
        usage: [Int64: UsageSample]? = nil, metrics: String? = nil
    ) {
        self.ok = ok
        self.error = error
        self.exitCode = exitCode
        self.token = token
        self.status = status
        self.accounts = accounts
        self.usage = usage
        self.metrics = metrics
    }

    /// A failure reply.
    public static func failure(_ message: String, exitCode: Int32) -> DaemonReply {
        DaemonReply(ok: false, error: message, exitCode: exitCode)
    }
}

/// A daemon's "no" to a request: its message and the exit code it chose, as they are.
public struct DaemonRefusal: Error, Sendable, CustomStringConvertible {
    /// What the daemon said.
    public var message: String
    /// The exit code the daemon gave for it.
    public var exitCode: Int32

    /// The refusal of a reply that is not `ok`.
    public init(_ reply: DaemonReply, otherwise: String) {
        message = reply.error ?? otherwise
        exitCode = reply.exitCode ?? 1
    }

    public var description: String { message }
}

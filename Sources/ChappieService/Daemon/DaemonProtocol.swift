public import ChappieCore
public import ChappieStore
public import Foundation

/// A request to the daemon's socket: one JSON object on one line.
public struct DaemonRequest: Codable, Sendable {
    /// `token`, `status`, `accounts`, `usage` or `metrics`.
    public var command: String
    /// The account, for `token` (the active one when absent).
    public var account: String?
    /// For `token`: refresh when the token expires within this many seconds.
    public var marginSeconds: Int?

    /// Reads one request line; `nil` when it is not a JSON object with a `command`.
    public static func decode(line: Data) -> DaemonRequest? {
        try? JSONDecoder().decode(DaemonRequest.self, from: line)
    }

    /// Creates a request.
    public init(command: String, account: String? = nil, marginSeconds: Int? = nil) {
        self.command = command
        self.account = account
        self.marginSeconds = marginSeconds
    }
}

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

    /// A failure reply.
    public static func failure(_ message: String, exitCode: Int32) -> DaemonReply {
        DaemonReply(ok: false, error: message, exitCode: exitCode)
    }
}

/// Talks to a running daemon.
public enum DaemonClient {
    /// The default socket path in a data directory.
    public static func defaultSocket(in location: StoreLocation) -> URL {
        location.directory.appendingPathComponent("chappie.sock")
    }

    /// Sends a request; `nil` when no daemon listens at `socket`.
    public static func send(_ request: DaemonRequest, to socket: URL, timeout: Duration = .seconds(60)) -> DaemonReply? {
        guard FileManager.default.fileExists(atPath: socket.path), let descriptor = UnixSocket.connect(to: socket.path, timeout: timeout) else {
            return nil
        }
        defer { close(descriptor) }
        guard var line = try? JSONEncoder().encode(request) else { return nil }
        line.append(0x0A)
        UnixSocket.write(descriptor, line)
        guard let answer = UnixSocket.readLine(descriptor) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(DaemonReply.self, from: answer)
    }
}

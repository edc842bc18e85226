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

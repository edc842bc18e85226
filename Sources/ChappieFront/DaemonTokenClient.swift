import Glibc

/// `token` asked of a running daemon, as the full binary asks it (docs/operations.md, "The local
/// API"): one JSON line each way over the daemon's Unix socket, 60 seconds at most.
package enum DaemonTokenClient {
    /// What asking came to.
    package enum Outcome: Equatable, Sendable {
        /// The daemon's token.
        case token(FrontToken)
        /// The daemon refused: its message and exit code, which the full binary prints as they are.
        case refused(message: String, exitCode: Int32)
        /// No daemon there, or none that answered: the store is read instead, as the full binary does.
        case noDaemon
        /// A reply this reader does not take as surely as the full binary's decoder would (more
        /// than a token or a refusal, a value of another type, a key twice, a byte-order mark):
        /// the full binary asks again and reads it.
        case full
    }

    static let timeoutSeconds = 60

    static func ask(_ request: FrontRequest.TokenRequest, socket path: String) -> Outcome {
        // The request as the full binary's encoder writes it; names are plain ASCII, nothing to escape.
        var line = #"{"command":"token""#
        if let name = request.name { line += #","account":"\#(name)""# }
        line += #","marginSeconds":\#(request.marginSeconds)}"#
        guard let answer = DaemonSocket.exchange(line, socket: path, timeoutMilliseconds: timeoutSeconds * 1000) else { return .noDaemon }
        return outcome(reply: answer)
    }

    /// What a reply line says, as the full binary's decoder (`DaemonReply`, dates in seconds) reads
    /// it; fuzzed against that decoder (`front-reader`).
    package static func outcome(reply bytes: [UInt8]) -> Outcome {
        guard let reply = JSONValue.parse(bytes), let ok = reply["ok"]?.bool, let error = optional(reply["error"], { $0.string }),
            let exitCode = optional(reply["exitCode"], { $0.number.flatMap { Int32(exactly: $0) } }),
            Set(reply.objectKeys).isSubset(of: ["ok", "error", "exitCode", "token"])
        else { return .full }
        guard let token = reply["token"], token != .null else {
            return .refused(message: error ?? "the daemon gave no token", exitCode: exitCode ?? 1)
        }
        guard let name = token["name"]?.string, let accessToken = token["accessToken"]?.string, let fedramp = token["fedramp"]?.bool,
            let expiry = optional(token["expiresAt"], { $0.number }), let accountID = optional(token["chatgptAccountID"], { $0.string }),
            let warning = optional(token["warning"], { $0.string }),
            Set(token.objectKeys).isSubset(of: ["name", "accessToken", "expiresAt", "chatgptAccountID", "fedramp", "warning"])
        else { return .full }
        guard ok else { return .refused(message: error ?? "the daemon gave no token", exitCode: exitCode ?? 1) }
        // A time Foundation would print otherwise than whole seconds: the full binary prints it.
        guard expiry.map({ $0 == $0.rounded(.towardZero) && $0 >= 0 && $0 <= AccessTokenClaims.latestExpiry }) ?? true else { return .full }
        return .token(
            FrontToken(
                name: name, accessToken: accessToken, expiresAt: expiry.map { Int64($0) }, chatgptAccountID: accountID, fedramp: fedramp,
                warning: warning))
    }

    /// An optional member: `.some(nil)` when absent or null, `.some(value)` when of the type, `nil` otherwise.
    private static func optional<T>(_ value: JSONValue?, _ read: (JSONValue) -> T?) -> T?? {
        guard let value, value != .null else { return .some(nil) }
        return read(value).map { .some($0) }
    }
}

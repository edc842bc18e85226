import ChappieSystem
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
        switch DaemonSocketExchange.exchange(Array(line.utf8), socket: path, timeoutMilliseconds: timeoutSeconds * 1000) {
        case .reply(let answer): return outcome(reply: answer)
        case .noDaemon, .noAnswer: return .noDaemon
        // Another user listens there: the full binary says so, and reads nothing else.
        case .foreignListener: return .full
        }
    }

    /// What a reply line says, as the full binary's decoder (`DaemonReply`, dates in seconds) reads
    /// it; fuzzed against that decoder (`front-reader`).
    package static func outcome(reply bytes: [UInt8]) -> Outcome {
        guard let reply = Members(JSONValue.parse(bytes), ["ok", "error", "exitCode", "token"]), let ok = reply.required("ok", \.bool),
            let error = reply.optional("error", \.string), let exitCode = reply.optional("exitCode", \.int32)
        else { return .full }
        guard let token = reply["token"], token != .null else {
            return .refused(message: error ?? "the daemon gave no token", exitCode: exitCode ?? 1)
        }
        guard let token = Members(token, ["name", "accessToken", "expiresAt", "chatgptAccountID", "fedramp", "warning"]),
            let name = token.required("name", \.string), let accessToken = token.required("accessToken", \.string),
            let fedramp = token.required("fedramp", \.bool), let expiry = token.optional("expiresAt", \.number),
            let accountID = token.optional("chatgptAccountID", \.string), let warning = token.optional("warning", \.string)
        else { return .full }
        guard ok else { return .refused(message: error ?? "the daemon gave no token", exitCode: exitCode ?? 1) }
        // A time Foundation would print otherwise than whole seconds: the full binary prints it.
        guard expiry.map({ $0 == $0.rounded(.towardZero) && $0 >= 0 && $0 <= AccessTokenClaims.latestExpiry }) ?? true else { return .full }
        return .token(
            FrontToken(
                name: name, accessToken: accessToken, expiresAt: expiry.map { Int64($0) }, chatgptAccountID: accountID, fedramp: fedramp,
                warning: warning))
    }
}

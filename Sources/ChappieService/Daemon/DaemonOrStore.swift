import Chappie
import ChappieSystem
public import ChappieCore
public import ChappieDaemonClient
public import Foundation

/// Where `token`, `usage --cached` and `status` get their answer: a running daemon, which answers
/// without this process opening the store (no key derivation, no migration check), else the store.
///
/// ```swift
/// let route = DaemonOrStore(options: ServiceOptions(home: "~/chappie-test"))
/// let (daemon, accounts, note) = try await route.status()
/// ```
public struct DaemonOrStore: Sendable {
    /// The store's options, for when no daemon answers.
    public let options: ServiceOptions
    /// The daemon's socket.
    public let socket: URL

    /// Asks the daemon at `socket` (default: the data directory's), else opens the store of `options`.
    public init(options: ServiceOptions, socket: URL? = nil) {
        self.options = options
        self.socket = socket ?? options.daemonSocket
    }

    /// A valid token for an account (the active one when `name` is `nil`), refreshed when it
    /// expires within `margin`.
    ///
    /// - Throws: ``DaemonRefusal`` with the daemon's message and exit code; the store's and the
    ///   refresher's errors when no daemon runs.
    package func token(for name: AccountName?, margin: Duration) async throws -> DaemonReply.Token {
        let request = DaemonRequest(command: "token", account: name?.rawValue, marginSeconds: Int(margin.components.seconds))
        if let reply = try await ask(request) {
            guard reply.ok, let token = reply.token else { throw DaemonRefusal(reply, otherwise: "the daemon gave no token") }
            return token
        }
        // Stopped while the daemon was asked: the store is not opened.
        try Task.checkCancellation()
        return DaemonReply.Token(try await ChappieServices.open(options).tokens.token(for: name, margin: margin))
    }

    /// The daemon's accounts and their newest readings; `nil` when no daemon answers (then poll or
    /// read the store).
    ///
    /// - Throws: ``DaemonSocketError`` for a socket chappie will not talk to.
    public func cachedUsage(timeout: Duration = .seconds(60)) async throws -> (accounts: [Account], latest: [Int64: UsageSample])? {
        guard let reply = try await ask(DaemonRequest(command: "usage"), timeout: timeout), reply.ok,
            let accounts = reply.accounts
        else {
            return nil
        }
        return (accounts, reply.usage ?? [:])
    }

    /// What `status` shows: the daemon's own state and its view of the accounts, or, when no daemon
    /// answers (within `timeout`), the store's accounts and no daemon, with why when something is
    /// at the socket that did not answer.
    public func status(timeout: Duration = .seconds(10)) async throws -> (daemon: DaemonReply.Status?, accounts: [Account], note: String?) {
        let note: String?
        try checkDirectory()
        switch try await DaemonClient.ask(DaemonRequest(command: "status"), to: socket, timeout: timeout) {
        case .replied(let reply) where reply.ok:
            return (reply.status, reply.accounts ?? [], nil)
        case .replied(let reply):
            note = "the daemon at \(socket.path) refused the status request (\(reply.error ?? "no reason given")); showing the store's view"
        case .noAnswer:
            note =
                "something accepts connections at \(socket.path) but gave no answer within \(timeout.components.seconds) s; showing the store's view"
        case .noDaemon:
            note = nil
        }
        try Task.checkCancellation()
        return (nil, try await ChappieServices.open(options).accounts.all(), note)
    }

    /// Whether a daemon answers on the socket (another data directory's may use the same path).
    public func daemonAnswers(timeout: Duration) async throws -> Bool {
        try await ask(DaemonRequest(command: "status"), timeout: timeout) != nil
    }

    /// The daemon's reply, once the data directory holding its socket is known to be this user's
    /// alone; `nil` when no daemon answers.
    private func ask(_ request: DaemonRequest, timeout: Duration = .seconds(60)) async throws(DaemonSocketError) -> DaemonReply? {
        try checkDirectory()
        return try await DaemonClient.send(request, to: socket, timeout: timeout)
    }

    /// Refuses a data directory another user could have put the socket in. Only for the data
    /// directory's own socket: one named with `--socket` is where the user chose, and the check of
    /// who listens covers it.
    private func checkDirectory() throws(DaemonSocketError) {
        guard socket == options.daemonSocket else { return }
        let directory = options.location.directory.path
        if let problem = PathOwnership.problem(at: directory) { throw .untrustedDirectory(directory, problem) }
    }
}

extension DaemonReply.Token {
    /// A refresher's answer as the token `chappie token` prints, the same from the daemon or the store.
    init(_ fresh: TokenRefresher.Fresh) {
        self.init(
            name: fresh.account.name.rawValue, accessToken: fresh.credentials.accessToken, expiresAt: fresh.expiresAt,
            chatgptAccountID: fresh.account.info.accountID, fedramp: fresh.account.info.isFedRAMPAccount, warning: fresh.warning)
    }
}

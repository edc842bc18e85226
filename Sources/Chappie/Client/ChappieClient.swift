public import ChappieCore
package import ChappieNet
import ChappieStore
package import Foundation
import Synchronization

/// Sends prompts for one account and streams the replies over WebSocket or HTTP/SSE
/// (`…/backend-api/codex/responses`, docs/protocol.md §8.1–§8.2).
///
/// The transport follows ``ChappieStreamingTransportPolicy``: by default each streaming request
/// opens a WebSocket; a failed socket reconnects within the turn (replayed text is not delivered
/// twice), and once the reconnects are spent the client streams over HTTP/SSE for the rest of its
/// life (``activeTransport`` says which). The account's token is refreshed before a request when
/// needed and once more after a 401. 429s, 5xx answers and network failures before any output are
/// retried as the ``ChappieRateLimitBackoffPolicy`` says. Usage seen in headers and
/// `codex.rate_limits` events is stored as samples. A task cancelled while it iterates a stream gets
/// `CancellationError`, and the transfer stops.
///
/// ```swift
/// let client = Chappie.client(configuration: configuration)
/// for try await event in client.stream("Hello") {
///     if case .textDelta(let text) = event { print(text, terminator: "") }
/// }
/// ```
public final class ChappieClient: Sendable {
    /// Which account and services, and the transport and backoff policies.
    public let configuration: ChappieConfiguration
    /// How failures before output are retried (from the configuration).
    public var rateLimitBackoff: ChappieRateLimitBackoffPolicy { configuration.rateLimitBackoff }
    /// Which transport streams (from the configuration).
    public var streamingTransportPolicy: ChappieStreamingTransportPolicy { configuration.streamingTransportPolicy }
    let http: ChappieHTTPClient
    let webSocket: ChappieWebSocketClient
    let sessionID = UUID().uuidString.lowercased()
    let tools: HostToolRunner
    /// Workspace routing answers, by account and credential generation.
    let routes = WorkspaceRoutes()
    private let transport: Mutex<TransportChoice>
    private let store: StoreHandle

    /// Creates a client.
    public init(configuration: ChappieConfiguration = ChappieConfiguration()) {
        self.configuration = configuration
        self.http = configuration.endpoints.httpClient(ChappieHTTPClientConfiguration(idleTimeout: .seconds(300)))
        self.webSocket = ChappieWebSocketClient(configuration: ChappieWebSocketClientConfiguration(trust: configuration.endpoints.trust))
        self.tools = HostToolRunner(configuration: configuration)
        self.store = StoreHandle(configuration.store)
        self.transport = Mutex(
            TransportChoice(
                policy: configuration.streamingTransportPolicy,
                proxy: ProxyEnvironment().proxy(for: configuration.endpoints.responsesWebSocketURL)))
    }

    /// The transport the next streaming request starts on: ``ChappieStreamingTransport/webSocket``
    /// until the client falls back (or when a proxy is set, which its WebSocket does not use).
    public var activeTransport: ChappieStreamingTransport {
        transport.withLock { $0.current }
    }

    /// Why the client streams over HTTP/SSE although the policy prefers WebSocket; `nil` otherwise.
    public var transportFallbackReason: String? {
        transport.withLock { $0.fallbackReason }
    }

    /// Sends a prompt and returns the whole reply.
    ///
    /// - Throws: ``ChappieClientError``, or `CancellationError` when the calling task is cancelled.
    public func send(_ prompt: String) async throws -> String {
        var text = ""
        for try await event in stream(prompt) {
            if case .textDelta(let delta) = event { text += delta }
        }
        return text
    }

    /// Streams the reply to a prompt.
    ///
    /// Cancelling the task that iterates stops the transfer at once and the loop throws
    /// `CancellationError`, wherever the cancellation lands (events already buffered come first).
    /// A loop that ends without an error has seen the whole reply.
    public func stream(_ prompt: String) -> AsyncThrowingStream<ChappieStreamEvent, any Error> {
        streamResponse(ChappieResponseRequest(input: [ChappieInputMessage(text: prompt)]))
    }

    /// Streams the reply to one message.
    public func stream(_ message: ChappieInputMessage) -> AsyncThrowingStream<ChappieStreamEvent, any Error> {
        streamResponse(ChappieResponseRequest(input: [message]))
    }

    /// Streams the reply to a prompt, with a handle to cancel it from elsewhere.
    public func streamHandle(_ prompt: String) -> ChappieStreamHandle {
        streamHandle(ChappieResponseRequest(input: [ChappieInputMessage(text: prompt)]))
    }

    /// Streams the reply to one message, with a handle to cancel it from elsewhere.
    public func streamHandle(_ message: ChappieInputMessage) -> ChappieStreamHandle {
        streamHandle(ChappieResponseRequest(input: [message]))
    }

    /// Streams the reply to a full request, with a handle to cancel it from elsewhere.
    public func streamHandle(_ request: ChappieResponseRequest) -> ChappieStreamHandle {
        let (events, task) = start(request)
        return ChappieStreamHandle(events: events, task: task)
    }

    /// Streams the reply to a full request.
    public func streamResponse(_ request: ChappieResponseRequest) -> AsyncThrowingStream<ChappieStreamEvent, any Error> {
        start(request).events
    }

    // MARK: The request

    /// Starts the request in a task of its own. A consumer whose task is cancelled gets
    /// `CancellationError`, also when the cancellation lands between two events: a plain
    /// `AsyncThrowingStream` would then just end, as a whole reply does, and a partial reply would
    /// pass for a complete one. Events already buffered are delivered before the error.
    private func start(_ request: ChappieResponseRequest) -> (events: AsyncThrowingStream<ChappieStreamEvent, any Error>, task: Task<Void, Never>) {
        let (events, continuation) = AsyncThrowingStream.makeStream(of: ChappieStreamEvent.self)
        let task = Task { await self.run(request, into: continuation) }
        continuation.onTermination = { termination in
            // Runs before the stream records its own end (the standard library's cancel() calls the
            // handler, then finishes), so this error is the one the consumer sees;
            // ClientTests.cancelledBetweenEvents holds it to that.
            if case .cancelled = termination { continuation.finish(throwing: CancellationError()) }
            task.cancel()
        }
        return (events, task)
    }

    private func run(_ request: ChappieResponseRequest, into continuation: AsyncThrowingStream<ChappieStreamEvent, any Error>.Continuation) async {
        do {
            try await perform(request) { continuation.yield($0) }
            continuation.finish()
        } catch {
            continuation.finish(throwing: Task.isCancelled ? CancellationError() : error)
        }
    }

    /// The request, and a follow-up turn for each round of tool calls until the model answers
    /// without one.
    private func perform(_ request: ChappieResponseRequest, emit: @escaping (ChappieStreamEvent) -> Void) async throws {
        try HostToolRunner.validate(configuration)
        let store = try await store.opened()
        let account: Account
        do {
            account = try await store.account(named: configuration.account)
        } catch {
            // No such account is missingCredential.
            throw ChappieClientError.storeUnavailable(error)
        }
        guard account.info.accountID != nil else { throw ChappieClientError.missingAccountID }
        let refresher = TokenRefresher(
            store: store, oauth: OAuthClient(endpoints: configuration.endpoints, http: http), margin: configuration.refreshMargin)
        var credentials = try await credentials(refresher, account, force: false)
        var input = request.input.map(ConversationItem.message)
        var text = ""
        var usage: ChappieTokenUsage?
        var rounds = 0
        while true {
            var turn = ResponseTurn(
                request: request, input: input, credentials: credentials,
                events: ResponseEventReader(store: store, account: credentials.account, emit: emit))
            try await stream(&turn, refresher: refresher)
            text += turn.replay.deliveredText
            if let used = turn.events.usage { usage = usage.map { $0 + used } ?? used }
            let calls = turn.events.functionCalls
            guard !calls.isEmpty else {
                emit(
                    .completed(
                        ChappieResponse(id: turn.events.responseID, status: "completed", text: text, errorCode: nil, errorMessage: nil, usage: usage))
                )
                return
            }
            guard rounds < configuration.toolLoopLimit else { throw ChappieClientError.toolLoopLimitExceeded(configuration.toolLoopLimit) }
            rounds += 1
            if !turn.replay.deliveredText.isEmpty {
                input.append(.message(ChappieInputMessage(role: .assistant, text: turn.replay.deliveredText)))
            }
            for call in calls {
                input.append(.functionCall(call))
                input.append(.functionCallOutput(callID: call.callID, output: try await tools.run(call, emit: emit)))
            }
            // A tool may have run past the token's expiry.
            credentials = try await self.credentials(refresher, turn.credentials.account, force: false)
        }
    }

    /// Streams one turn until `response.completed`, retrying and reconnecting as the policies say.
    private func stream(_ turn: inout ResponseTurn, refresher: TokenRefresher) async throws {
        var retries = 0
        var webSocketFailures = 0
        var connectionLimitReopens = 0
        var refreshedAfter401 = false
        while true {
            try Task.checkCancellation()
            turn.replay.restart()
            turn.events.beginAttempt()
            let transport = try transport.withLock { try $0.next() }
            do {
                switch transport {
                case .webSocket: try await streamOverWebSocket(&turn)
                case .httpSSE: try await streamOverSSE(&turn)
                }
                return
            } catch let failure as AttemptFailure {
                // A cancelled turn is not a failed transport: it must not spend the budget or fall back.
                try Task.checkCancellation()
                switch failure {
                case .status(401, _, _, _):
                    guard !refreshedAfter401 else {
                        throw ChappieClientError.reauthenticationRequired("the service refused the refreshed access token (HTTP 401)")
                    }
                    refreshedAfter401 = true
                    turn.credentials = try await credentials(refresher, turn.credentials.account, force: true)
                case .status(let status, let headers, let body, let onUpgrade):
                    if onUpgrade && status != 429 {
                        // A refused upgrade (404, 403, 502, …) is a WebSocket failure, not the turn's.
                        try await webSocketFailed(
                            &webSocketFailures, reason: "the upgrade was refused with HTTP \(status)",
                            error: .httpError(status: status, body: Self.text(body)))
                        continue
                    }
                    let limit = status == 429 ? Self.usageLimit(body, headers: headers) : nil
                    retries += 1
                    guard status == 429 || status >= 500, retries <= rateLimitBackoff.maxRetries else {
                        if let limit {
                            if let snapshot = limit.rateLimit {
                                try? await turn.events.store.recordUsage([snapshot], for: turn.credentials.account, source: .limitError)
                            }
                            throw ChappieClientError.usageLimitReached(limit)
                        }
                        throw ChappieClientError.httpError(status: status, body: Self.text(body))
                    }
                    let retryAfter = headers["Retry-After"].flatMap { ChappieHTTPHeaders.retryAfter($0) }
                    var delay = rateLimitBackoff.delay(forAttempt: retries, retryAfter: retryAfter)
                    // A full usage window resets in hours, whatever a Retry-After says: such a retry
                    // waits no longer than maximumDelay, so that the error is not held back for minutes.
                    if limit != nil { delay = min(delay, rateLimitBackoff.maximumDelay) }
                    try await Task.sleep(for: .seconds(delay))
                case .webSocket(let reason, let error):
                    try await webSocketFailed(&webSocketFailures, reason: reason, error: error)
                case .connectionLimitReached:
                    // Not a failure (§8.2): a new socket, without spending the budget; bounded all the same.
                    connectionLimitReopens += 1
                    guard connectionLimitReopens <= Self.maximumConnectionLimitReopens else {
                        throw ChappieClientError.networkFailure("the WebSocket kept reaching its connection limit")
                    }
                case .network(let message):
                    retries += 1
                    guard retries <= rateLimitBackoff.maxRetries, !ChappieTLSTrust.isTrustFailure(message) else {
                        throw ChappieClientError.networkFailure(message)
                    }
                    try await Task.sleep(for: .seconds(rateLimitBackoff.delay(forAttempt: retries, retryAfter: nil)))
                }
            }
        }
    }

    /// Counts a WebSocket failure of this turn: backs off and reconnects while the budget lasts,
    /// then falls back to HTTP/SSE for good, or throws `error` when the policy does not fall back.
    private func webSocketFailed(_ failures: inout Int, reason: String, error: ChappieClientError) async throws {
        failures += 1
        if failures > streamingTransportPolicy.maxWebSocketReconnectionAttempts {
            guard streamingTransportPolicy.fallsBackToHTTPSSE else { throw error }
            transport.withLock { $0.fallBack(because: reason) }
            return
        }
        let base = configuration.webSocketReconnectDelay * (1 << min(failures - 1, 16))
        try await Task.sleep(for: min(base, .seconds(5)))
    }

    private func credentials(_ refresher: TokenRefresher, _ account: Account, force: Bool) async throws -> TokenRefresher.Fresh {
        do {
            return try await refresher.validCredentials(for: account, force: force)
        } catch let error as ChappieAuthError {
            if error == .missingRefreshToken { throw ChappieClientError.missingRefreshToken }
            if error.requiresReauthentication { throw ChappieClientError.reauthenticationRequired(error.errorDescription ?? "\(error)") }
            throw ChappieClientError.tokenRefreshFailed(error)
        } catch let error as CancellationError {
            throw error
        } catch {
            throw ChappieClientError.storeUnavailable(error)
        }
    }

    /// New sockets a turn opens after `websocket_connection_limit_reached` before it gives up (the
    /// limit is 60 minutes per socket: more than one in a turn means something else is wrong).
    static let maximumConnectionLimitReopens = 3

    /// A body for an error message: its start, as text.
    static func text(_ body: Data) -> String {
        String(decoding: body.prefix(2000), as: UTF8.self)
    }

    /// A 429 body that says `usage_limit_reached` (§7.1), with the windows from the headers.
    package static func usageLimit(_ body: Data, headers: ChappieHTTPHeaders) -> ChappieUsageLimit? {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
            let error = object["error"] as? [String: Any], error["type"] as? String == "usage_limit_reached"
        else { return nil }
        return ChappieUsageLimit(
            type: "usage_limit_reached", message: error["message"] as? String,
            plan: (error["plan_type"] as? String).map(ChappiePlan.init(rawValue:)),
            resetsAt: WireNumber.date(error["resets_at"]),
            resetsInSeconds: WireNumber.integer(error["resets_in_seconds"], in: 0...WireNumber.longestSeconds).map(Double.init),
            rateLimit: ChappieUsageLimitSnapshot.fromHeaders { headers[$0] })
    }
}

/// One turn's state across its attempts.
struct ResponseTurn {
    let request: ChappieResponseRequest
    /// The conversation it sends: the request's messages, then earlier rounds' calls and outputs.
    let input: [ConversationItem]
    var credentials: TokenRefresher.Fresh
    var events: ResponseEventReader
    var replay = ReplayGuard()
    /// Whether the rate-limit headers of a response or upgrade were delivered (once per turn).
    var headerUsageDelivered = false
}

/// Which transport the client is on, for its whole life.
struct TransportChoice {
    let policy: ChappieStreamingTransportPolicy
    let proxy: String?
    private(set) var fallbackReason: String?

    init(policy: ChappieStreamingTransportPolicy, proxy: String?) {
        self.policy = policy
        self.proxy = proxy
        if policy.prefersWebSocket && policy.fallsBackToHTTPSSE && proxy != nil {
            fallbackReason = "a proxy is set for the backend, and chappie's WebSocket does not go through proxies"
        }
    }

    var current: ChappieStreamingTransport {
        policy.prefersWebSocket && fallbackReason == nil ? .webSocket : .httpSSE
    }

    /// The transport of the next attempt.
    ///
    /// - Throws: when the policy insists on WebSocket but a proxy is set.
    func next() throws(ChappieClientError) -> ChappieStreamingTransport {
        if current == .webSocket, proxy != nil {
            throw .invalidConfiguration("a proxy is set for the backend, and chappie's WebSocket does not go through proxies; allow HTTP/SSE")
        }
        return current
    }

    /// Never back to WebSocket (docs/sdk.md).
    mutating func fallBack(because reason: String) {
        if fallbackReason == nil { fallbackReason = reason }
    }
}

/// A stream and the means to stop it from elsewhere.
public struct ChappieStreamHandle: Sendable {
    /// The events.
    public let events: AsyncThrowingStream<ChappieStreamEvent, any Error>
    let task: Task<Void, Never>

    /// Stops the transfer now; iterating `events` ends with `CancellationError`.
    public func cancel() {
        task.cancel()
    }

    /// Returns once the request's work has ended, a refresh it sent to the issuer stored
    /// included: a process that exits when the stream ends must wait for this, or a rotated
    /// refresh token is lost.
    package func finished() async {
        await task.value
    }
}

extension Chappie {
    /// A client for the configured account, with these policies instead of the configuration's.
    @available(*, deprecated, message: "set streamingTransportPolicy and rateLimitBackoff on the ChappieConfiguration")
    public static func client(
        configuration: ChappieConfiguration, rateLimitBackoff: ChappieRateLimitBackoffPolicy,
        streamingTransportPolicy: ChappieStreamingTransportPolicy
    ) -> ChappieClient {
        var configuration = configuration
        configuration.rateLimitBackoff = rateLimitBackoff
        configuration.streamingTransportPolicy = streamingTransportPolicy
        return ChappieClient(configuration: configuration)
    }

    /// A client for the configured account, with the configuration's transport and backoff policies.
    public static func client(configuration: ChappieConfiguration = ChappieConfiguration()) -> ChappieClient {
        ChappieClient(configuration: configuration)
    }

    /// A client for the default account with a backoff policy.
    public static func client(rateLimitBackoff: ChappieRateLimitBackoffPolicy) -> ChappieClient {
        ChappieClient(configuration: ChappieConfiguration(rateLimitBackoff: rateLimitBackoff))
    }

    /// A client for the default account with a transport policy.
    public static func client(streamingTransportPolicy: ChappieStreamingTransportPolicy) -> ChappieClient {
        ChappieClient(configuration: ChappieConfiguration(streamingTransportPolicy: streamingTransportPolicy))
    }
}

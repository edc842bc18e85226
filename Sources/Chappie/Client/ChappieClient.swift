public import ChappieCore
import ChappieNet
public import ChappieStore
public import Foundation

/// Sends prompts for one account and streams the replies over HTTP/SSE
/// (`POST /backend-api/codex/responses`, openai-protocol.md §8.1).
///
/// The account's token is refreshed before a request when needed and once more after a 401. 429s
/// that are not usage limits, 5xx answers and network failures before any output are retried as the
/// ``ChappieRateLimitBackoffPolicy`` says. Usage seen in headers and `codex.rate_limits` events is
/// stored as samples. Cancelling stops the transfer and ends the stream with `CancellationError`.
///
/// ```swift
/// let client = Chappie.client(configuration: configuration)
/// for try await event in client.stream("Hello") {
///     if case .textDelta(let text) = event { print(text, terminator: "") }
/// }
/// ```
public final class ChappieClient: Sendable {
    /// Which account and services.
    public let configuration: ChappieConfiguration
    /// How failures before output are retried.
    public let rateLimitBackoff: ChappieRateLimitBackoffPolicy
    /// Which transport streams (every policy streams over HTTP/SSE for now).
    public let streamingTransportPolicy: ChappieStreamingTransportPolicy
    private let http: HTTPClient
    private let sessionID = UUID().uuidString.lowercased()

    /// Creates a client.
    public init(
        configuration: ChappieConfiguration = ChappieConfiguration(), rateLimitBackoff: ChappieRateLimitBackoffPolicy = .default,
        streamingTransportPolicy: ChappieStreamingTransportPolicy = .default
    ) {
        self.configuration = configuration
        self.rateLimitBackoff = rateLimitBackoff
        self.streamingTransportPolicy = streamingTransportPolicy
        self.http = HTTPClient(configuration: HTTPClientConfiguration(idleTimeout: .seconds(300)))
    }

    /// Sends a prompt and returns the whole reply.
    ///
    /// - Throws: ``ChappieClientError``, or `CancellationError` when the calling task is cancelled.
    public func send(_ prompt: String) async throws -> String {
        var text = ""
        for try await event in stream(prompt) {
            if case .textDelta(let delta) = event { text += delta }
        }
        // A stream whose consumer was cancelled ends without an error: say what happened.
        try Task.checkCancellation()
        return text
    }

    /// Streams the reply to a prompt.
    ///
    /// Cancelling the task that iterates stops the transfer at once; the loop then ends (an
    /// `AsyncThrowingStream` ends rather than throws for a cancelled consumer), so check
    /// `Task.isCancelled` after it, or use ``streamHandle(_:)`` whose `cancel()` ends the events with
    /// `CancellationError`.
    public func stream(_ prompt: String) -> AsyncThrowingStream<ChappieStreamEvent, any Error> {
        streamResponse(ChappieResponseRequest(input: [ChappieInputMessage(text: prompt)]))
    }

    /// Streams the reply to one message.
    public func stream(_ message: ChappieInputMessage) -> AsyncThrowingStream<ChappieStreamEvent, any Error> {
        streamResponse(ChappieResponseRequest(input: [message]))
    }

    /// Streams the reply to a prompt, with a handle to cancel it from elsewhere.
    public func streamHandle(_ prompt: String) -> ChappieStreamHandle {
        let (events, continuation) = AsyncThrowingStream.makeStream(of: ChappieStreamEvent.self)
        let task = Task { await self.run(ChappieResponseRequest(input: [ChappieInputMessage(text: prompt)]), into: continuation) }
        continuation.onTermination = { _ in task.cancel() }
        return ChappieStreamHandle(events: events, task: task)
    }

    /// Streams the reply to a full request.
    public func streamResponse(_ request: ChappieResponseRequest) -> AsyncThrowingStream<ChappieStreamEvent, any Error> {
        let (events, continuation) = AsyncThrowingStream.makeStream(of: ChappieStreamEvent.self)
        let task = Task { await self.run(request, into: continuation) }
        continuation.onTermination = { _ in task.cancel() }
        return events
    }

    // MARK: The request

    private func run(_ request: ChappieResponseRequest, into continuation: AsyncThrowingStream<ChappieStreamEvent, any Error>.Continuation) async {
        do {
            try await perform(request) { continuation.yield($0) }
            continuation.finish()
        } catch is CancellationError {
            continuation.finish(throwing: CancellationError())
        } catch {
            continuation.finish(throwing: Task.isCancelled ? CancellationError() : error)
        }
    }

    private func perform(_ request: ChappieResponseRequest, emit: (ChappieStreamEvent) -> Void) async throws {
        let store: any AccountStore
        let account: Account
        do {
            store = try await StoreOpener.open(configuration.store).store
            account = try await store.account(named: configuration.account)
        } catch let error as StoreError where error.code == .notFound {
            throw ChappieClientError.missingCredential
        }
        guard account.info.accountID != nil else { throw ChappieClientError.missingAccountID }
        let refresher = TokenRefresher(
            store: store, oauth: OAuthClient(endpoints: configuration.endpoints, http: http), margin: configuration.refreshMargin)
        var fresh = try await credentials(refresher, account, force: false)
        var attempt = 0
        var refreshedAfter401 = false
        while true {
            try Task.checkCancellation()
            let response: HTTPStreamingResponse
            do {
                response = try await http.stream(try httpRequest(request, account: fresh.account, token: fresh.credentials.accessToken))
            } catch let error as HTTPClientError {
                attempt += 1
                guard attempt <= rateLimitBackoff.maxRetries else { throw ChappieClientError.httpError(status: 0, body: error.description) }
                try await Task.sleep(for: .milliseconds(Int(rateLimitBackoff.delay(forAttempt: attempt, retryAfter: nil) * 1000)))
                continue
            }
            if response.status == 401 && !refreshedAfter401 {
                refreshedAfter401 = true
                fresh = try await credentials(refresher, fresh.account, force: true)
                continue
            }
            if response.status == 429 || response.status >= 500 || !response.isSuccess {
                let body = try await collect(response.body)
                if response.status == 429, let limit = usageLimit(body, headers: response.headers) {
                    if let snapshot = limit.rateLimit { try? await store.recordUsage([snapshot], for: fresh.account, source: .limitError) }
                    throw ChappieClientError.usageLimitReached(limit)
                }
                let retryable = response.status == 429 || response.status >= 500
                attempt += 1
                guard retryable, attempt <= rateLimitBackoff.maxRetries else {
                    throw ChappieClientError.httpError(status: response.status, body: String(decoding: body.prefix(2000), as: UTF8.self))
                }
                let retryAfter = response.headers["Retry-After"].flatMap(Double.init)
                try await Task.sleep(for: .milliseconds(Int(rateLimitBackoff.delay(forAttempt: attempt, retryAfter: retryAfter) * 1000)))
                continue
            }
            if let snapshot = ChappieUsageLimitSnapshot.fromHeaders({ response.headers[$0] }) {
                try? await store.recordUsage([snapshot], for: fresh.account, source: .headers)
                emit(.usageLimits(snapshot))
            }
            try await consume(response, store: store, account: fresh.account, emit: emit)
            return
        }
    }

    private func credentials(_ refresher: TokenRefresher, _ account: Account, force: Bool) async throws -> TokenRefresher.Fresh {
        do {
            return try await refresher.validCredentials(for: account, force: force)
        } catch let error as ChappieAuthError {
            if error == .missingRefreshToken { throw ChappieClientError.missingRefreshToken }
            if error.requiresReauthentication { throw ChappieClientError.reauthenticationRequired(error.errorDescription ?? "\(error)") }
            throw ChappieClientError.httpError(status: 0, body: error.errorDescription ?? "\(error)")
        } catch let error as StoreError where error.code == .credentialUnreadable {
            throw ChappieClientError.reauthenticationRequired(error.message)
        }
    }

    /// Reads the SSE events into stream events until `response.completed`.
    private func consume(_ response: HTTPStreamingResponse, store: any AccountStore, account: Account, emit: (ChappieStreamEvent) -> Void) async throws {
        var text = ""
        var responseID: String?
        do {
            for try await event in response.body.serverSentEvents {
                guard let object = (try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) as? [String: Any] else {
                    throw ChappieClientError.invalidResponse("a \(event.type) event is not a JSON object (after \(text.count) characters of text)")
                }
                let type = object["type"] as? String ?? event.type
                let body = object["response"] as? [String: Any]
                responseID = body?["id"] as? String ?? responseID
                switch type {
                case "response.output_text.delta":
                    if let delta = object["delta"] as? String, !delta.isEmpty {
                        text += delta
                        emit(.textDelta(delta))
                    }
                case "codex.rate_limits":
                    if let snapshot = ChappieUsageLimitSnapshot.fromRateLimitsEvent(object) {
                        try? await store.recordUsage([snapshot], for: account, source: .stream)
                        emit(.usageLimits(snapshot))
                    }
                case "response.completed":
                    emit(.completed(ChappieResponse(id: responseID, status: "completed", text: text, errorCode: nil, errorMessage: nil)))
                    return
                case "response.failed", "error":
                    let error = body?["error"] as? [String: Any] ?? object["error"] as? [String: Any]
                    throw ChappieClientError.responseFailed(ChappieResponse(
                        id: responseID, status: "failed", text: text, errorCode: error?["code"] as? String, errorMessage: error?["message"] as? String))
                case "response.incomplete":
                    let reason = (body?["incomplete_details"] as? [String: Any])?["reason"] as? String
                    throw ChappieClientError.responseFailed(ChappieResponse(
                        id: responseID, status: "incomplete", text: text, errorCode: reason, errorMessage: "incomplete response"))
                default:
                    emit(.raw(type: type, payload: event.data))
                }
            }
        } catch let error as HTTPClientError {
            throw ChappieClientError.responseFailed(ChappieResponse(
                id: responseID, status: "incomplete", text: text, errorCode: "connection_lost", errorMessage: error.description))
        }
        try Task.checkCancellation()
        throw ChappieClientError.responseFailed(ChappieResponse(
            id: responseID, status: "incomplete", text: text, errorCode: "stream_closed", errorMessage: "stream closed before response.completed"))
    }

    private func collect(_ body: HTTPBodyStream) async throws -> Data {
        var data = Data()
        for try await chunk in body where data.count < 1 << 20 { data.append(chunk) }
        return data
    }

    /// A 429 body that says `usage_limit_reached` (§7.1), with the windows from the headers.
    private func usageLimit(_ body: Data, headers: HTTPHeaders) -> ChappieUsageLimit? {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
            let error = object["error"] as? [String: Any], error["type"] as? String == "usage_limit_reached"
        else { return nil }
        return ChappieUsageLimit(
            type: "usage_limit_reached", message: error["message"] as? String,
            plan: (error["plan_type"] as? String).map(ChappiePlan.init(rawValue:)),
            resetsAt: (error["resets_at"] as? NSNumber).map { Date(timeIntervalSince1970: $0.doubleValue) },
            resetsInSeconds: (error["resets_in_seconds"] as? NSNumber)?.doubleValue,
            rateLimit: ChappieUsageLimitSnapshot.fromHeaders { headers[$0] })
    }

    /// The HTTP request of §8.1: headers and the `ResponsesApiRequest` body.
    private func httpRequest(_ request: ChappieResponseRequest, account: Account, token: String) throws -> HTTPRequest {
        var headers: HTTPHeaders = [
            "Content-Type": "application/json", "Accept": "text/event-stream", "originator": "chappie",
            "session-id": sessionID, "x-client-request-id": sessionID,
        ]
        headers["Authorization"] = "Bearer \(token)"
        headers["ChatGPT-Account-ID"] = account.info.accountID
        if account.info.isFedRAMPAccount { headers["X-OpenAI-Fedramp"] = "true" }
        var body: [String: Any] = [
            "model": request.model,
            "input": request.input.map { message in
                [
                    "type": "message", "role": message.role.rawValue,
                    "content": [["type": message.role == .assistant ? "output_text" : "input_text", "text": message.text]],
                ] as [String: Any]
            },
            "tools": request.allowsSearch ? [["type": "web_search"]] : [] as [[String: Any]],
            "tool_choice": "auto", "parallel_tool_calls": false, "store": false, "stream": true, "include": [] as [String],
            "prompt_cache_key": sessionID,
        ]
        if !request.instructions.isEmpty { body["instructions"] = request.instructions }
        let effort = request.reasoningEffort ?? (request.fastMode ? .low : nil)
        body["reasoning"] = effort.map { ["effort": $0.rawValue] as Any } ?? NSNull()
        if let tier = request.serviceTier ?? (request.fastMode ? "priority" : nil) { body["service_tier"] = tier }
        var http = HTTPRequest(url: configuration.endpoints.responsesURL, method: .post, headers: headers)
        http.body = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        return http
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
}

extension Chappie {
    /// A client for the configured account.
    public static func client(
        configuration: ChappieConfiguration = ChappieConfiguration(), rateLimitBackoff: ChappieRateLimitBackoffPolicy = .default,
        streamingTransportPolicy: ChappieStreamingTransportPolicy = .default
    ) -> ChappieClient {
        ChappieClient(configuration: configuration, rateLimitBackoff: rateLimitBackoff, streamingTransportPolicy: streamingTransportPolicy)
    }

    /// A client for the default account with a backoff policy.
    public static func client(rateLimitBackoff: ChappieRateLimitBackoffPolicy) -> ChappieClient {
        ChappieClient(rateLimitBackoff: rateLimitBackoff)
    }

    /// A client for the default account with a transport policy.
    public static func client(streamingTransportPolicy: ChappieStreamingTransportPolicy) -> ChappieClient {
        ChappieClient(streamingTransportPolicy: streamingTransportPolicy)
    }
}

import ChappieCore
import ChappieNet
import ChappieStore
import Foundation

extension ChappieClient {
    // MARK: HTTP/SSE (§8.1)

    /// One attempt over HTTP/SSE: `POST …/codex/responses`, events until `response.completed`.
    func streamOverSSE(_ turn: inout ResponseTurn) async throws {
        let response: ChappieHTTPStreamingResponse
        do {
            let route = await workspaceRoute(turn)
            let url = route.applied(to: configuration.endpoints.responsesURL) ?? configuration.endpoints.responsesURL
            var request = ChappieHTTPRequest(url: url, method: .post, headers: handshakeHeaders(turn))
            request.headers[WorkspaceRoute.routingHeader] = route.routingOverride
            request.headers["Content-Type"] = "application/json"
            request.headers["Accept"] = "text/event-stream"
            request.body = try ResponsesRequestBody.json(turn, tools: tools.definitions, sessionID: sessionID)
            response = try await http.stream(request)
        } catch let error as ChappieHTTPClientError {
            throw AttemptFailure.network(error.description)
        }
        guard response.isSuccess else {
            var body = Data()
            do {
                for try await chunk in response.body where body.count < 1 << 20 { body.append(chunk) }
            } catch let error as ChappieHTTPClientError {
                // The connection broke while the error's body arrived: a network failure like any other.
                throw AttemptFailure.network(error.description)
            }
            throw AttemptFailure.status(response.status, headers: response.headers, body: body, onUpgrade: false)
        }
        await recordHeaderUsage(response.headers, &turn)
        do {
            for try await event in response.body.serverSentEvents {
                if try await turn.events.read(event.data, type: event.type, replay: &turn.replay) == .completed { return }
            }
        } catch let error as ChappieHTTPClientError where error.code == .responseTooLarge {
            // Malformed, not a failed connection: asking again would bring the same endless line.
            guard turn.replay.hasDelivered else { throw ChappieClientError.invalidResponse(error.description) }
            throw turn.events.closedEarly(turn.replay, code: "malformed_stream", message: error.description)
        } catch let error as ChappieHTTPClientError {
            // Before any output a broken stream is retried as a failed connection is (docs/errors.md);
            // after it, the reply is cut and the text so far is the caller's.
            guard turn.replay.hasDelivered else { throw AttemptFailure.network(error.description) }
            throw turn.events.closedEarly(turn.replay, code: "connection_lost", message: error.description)
        }
        try Task.checkCancellation()
        guard turn.replay.hasDelivered else {
            throw AttemptFailure.network("the stream closed before response.completed, before any output")
        }
        throw turn.events.closedEarly(turn.replay, code: "stream_closed", message: "stream closed before response.completed")
    }

    // MARK: WebSocket (§8.2)

    /// One attempt over a WebSocket of its own (docs/sdk.md): the upgrade with the handshake headers,
    /// one `response.create` text frame, then the server's frames through the same event reading.
    func streamOverWebSocket(_ turn: inout ResponseTurn) async throws {
        let route = await workspaceRoute(turn)
        var headers = handshakeHeaders(turn)
        headers["OpenAI-Beta"] = "responses_websockets=2026-02-06"
        headers[WorkspaceRoute.routingHeader] = route.routingOverride
        let frame = try ResponsesRequestBody.webSocketFrame(turn, tools: tools.definitions, sessionID: sessionID)
        // The session body is a @Sendable closure (WSCore's handler): lend it the turn and take it
        // back; it runs within this call, so the turn is never used by two tasks at once.
        let box = TurnBox(turn)
        defer { turn = box.turn }
        let client = self
        do {
            let url = route.applied(to: configuration.endpoints.responsesWebSocketURL) ?? configuration.endpoints.responsesWebSocketURL
            try await webSocket.connect(url: url, headers: headers) { session in
                var turn = box.turn
                defer { box.turn = turn }
                await client.recordHeaderUsage(session.responseHeaders, &turn)
                try await session.send(frame)
                while let message = try await session.receive() {
                    guard case .text(let text) = message else {
                        throw AttemptFailure.webSocket(
                            reason: "the server sent a binary frame",
                            error: turn.events.closedEarly(turn.replay, code: "binary_frame", message: "the server sent a binary WebSocket frame"))
                    }
                    if try await turn.events.read(text, type: nil, replay: &turn.replay) == .completed { return }
                }
                try Task.checkCancellation()
                throw AttemptFailure.webSocket(
                    reason: "the socket closed before response.completed",
                    error: turn.events.closedEarly(turn.replay, code: "stream_closed", message: "the WebSocket closed before response.completed"))
            }
        } catch let refusal as WebSocketUpgradeRefused {
            throw AttemptFailure.status(refusal.status, headers: refusal.headers, body: refusal.body, onUpgrade: true)
        } catch let error as ChappieHTTPClientError {
            if error.code == .insecureAuthorization || error.code == .invalidURL { throw ChappieClientError.invalidConfiguration(error.description) }
            throw AttemptFailure.webSocket(
                reason: error.description,
                error: !box.turn.replay.hasDelivered
                    ? .networkFailure(error.description)
                    : box.turn.events.closedEarly(box.turn.replay, code: "connection_lost", message: error.description))
        }
    }

    // MARK: Shared

    /// Where this turn's account is served (workspace routing discovery, asked once per account
    /// and access token, 15 seconds at most); the configured origin when the answer cannot be had
    /// or breaks a rule.
    func workspaceRoute(_ turn: ResponseTurn) async -> WorkspaceRoute {
        guard let accountID = turn.credentials.account.info.accountID else { return .configured }
        let token = turn.credentials.credentials.accessToken
        return await routes.route(accountID: accountID, accessToken: token) {
            var request = ChappieHTTPRequest(url: configuration.endpoints.accountCheckURL, headers: handshakeHeaders(turn))
            request.headers["Accept"] = "application/json"
            request.totalTimeout = .seconds(15)
            guard let response = try? await http.execute(request), response.isSuccess else { return nil }
            return WorkspaceRoute.parse(response.body, accountID: accountID)
        }
    }

    /// The headers of §8.1/§8.3 that both transports send.
    private func handshakeHeaders(_ turn: ResponseTurn) -> ChappieHTTPHeaders {
        var headers: ChappieHTTPHeaders = [
            "originator": configuration.endpoints.originator, "version": ChappieVersion.current, "session-id": sessionID,
            "x-client-request-id": sessionID,
        ]
        headers["Authorization"] = "Bearer \(turn.credentials.credentials.accessToken)"
        headers["ChatGPT-Account-Id"] = turn.credentials.account.info.accountID
        if turn.credentials.account.info.isFedRAMPAccount { headers["X-OpenAI-Fedramp"] = "true" }
        return headers
    }

    /// The rate-limit headers of the response or the upgrade (§6.2), as the stream's first event.
    private func recordHeaderUsage(_ headers: ChappieHTTPHeaders, _ turn: inout ResponseTurn) async {
        guard let snapshot = ChappieUsageLimitSnapshot.fromHeaders({ headers[$0] }), !turn.headerUsageDelivered else { return }
        turn.headerUsageDelivered = true
        try? await turn.events.store.recordUsage([snapshot], for: turn.credentials.account, source: .headers)
        turn.events.emit(.usageLimits(snapshot))
    }
}

/// The turn, lent to the WebSocket session's closure and returned after it (never used by two
/// tasks at once: the attempt awaits the session).
private final class TurnBox: @unchecked Sendable {
    var turn: ResponseTurn

    init(_ turn: ResponseTurn) {
        self.turn = turn
    }
}

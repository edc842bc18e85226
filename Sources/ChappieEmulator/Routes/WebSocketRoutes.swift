import Foundation
import NIOCore
import NIOHTTP1
import WSCore

/// The backend's WebSocket transport (docs/protocol.md §8.2): `GET /backend-api/codex/responses`
/// with `Upgrade: websocket`, the same bearer and account rules as HTTP, the rate-limit headers on
/// the `101`, then one flat `{"type":"response.create", …}` text frame per turn answered with the
/// same events as SSE, one text frame each; failures as wrapped error frames.
struct WebSocketRoutes: Sendable {
    let state: EmulatorState
    let backend: BackendRoutes

    /// The upgrade path.
    static let path = "/backend-api/codex/responses"

    /// An accepted socket: its account, its `session-id`, and the headers of its `101`.
    struct Session: Sendable {
        let headers: [(String, String)]
        let accountID: String
        let sessionID: String
        let routes: WebSocketRoutes

        /// Answers each `response.create` until the client closes (or a fault closes first).
        func run(_ inbound: WebSocketInboundStream, _ outbound: WebSocketOutboundWriter) async throws {
            for try await message in inbound.messages(maxSize: 16 << 20) {
                guard case .text(let text) = message else {
                    try await outbound.write(.text(wrappedError(400, ["type": "invalid_request_error", "message": "Send text frames."])))
                    continue
                }
                guard try await routes.turn(text, session: self, outbound: outbound) else { return }
            }
        }
    }

    /// Decides an upgrade: the session, or the reply that refuses it (401, 404, …).
    func accept(_ head: HTTPRequestHead, clientPort: Int?) async -> Result<Session, ReplyError> {
        guard head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) == Self.path else {
            return .failure(ReplyError(.openAIError(404, message: "No WebSocket endpoint at this path.", code: "not_found")))
        }
        let refusal: Reply
        await state.note(
            path: Self.path, originator: head.headers["originator"].first, userAgent: head.headers["user-agent"].first,
            routingOverride: head.headers["x-openai-account-routing-override"].first,
            authority: head.headers["host"].first)
        let fault = await state.admit(path: Self.path, clientPort: clientPort, scope: .webSocketUpgrade)
        if case .refuseUpgrade(let status)? = fault {
            refusal = .openAIError(status, message: "Injected upgrade refusal (status \(status)).", type: "server_error", code: nil)
        } else if !(head.headers["openai-beta"].first ?? "").contains("responses_websockets=") {
            refusal = .openAIError(400, message: "OpenAI-Beta: responses_websockets=… is required.", code: "invalid_request")
        } else {
            switch await backend.authenticate(
                authorization: head.headers["authorization"].first, accountHeader: head.headers["chatgpt-account-id"].first)
            {
            case .success(let account):
                await state.record(.opened)
                return .success(
                    Session(
                        headers: backend.rateLimitHeaders(account), accountID: account.accountID,
                        sessionID: head.headers["session-id"].first ?? head.headers["session_id"].first ?? "", routes: self))
            case .failure(let error):
                refusal = error.reply
            }
        }
        await state.record(.refused)
        return .failure(ReplyError(refusal))
    }

    /// One turn; `false` when the socket is to close.
    private func turn(_ text: String, session: Session, outbound: WebSocketOutboundWriter) async throws -> Bool {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
            object["type"] as? String == "response.create"
        else {
            try await outbound.write(.text(wrappedError(400, ["type": "invalid_request_error", "message": "Expected a response.create frame."])))
            return true
        }
        if object["generate"] as? Bool == false {
            // Codex's prewarm: no output and no charge.
            for event in ReplyEvents.warmUp(model: object["model"] as? String ?? "gpt-5-codex") { try await outbound.write(.text(event.data)) }
            return true
        }
        await state.record(.turns)
        let fault = await state.admit(path: Self.path, clientPort: nil, scope: .webSocketTurn)
        let key = session.sessionID + "\u{0}" + text
        let divergentReplay = await state.takeDroppedTurn(key)
        if case .connectionLimit? = fault {
            try await outbound.write(
                .text(
                    wrappedError(
                        400,
                        [
                            "type": "invalid_request_error", "code": "websocket_connection_limit_reached",
                            "message": "Responses websocket connection limit reached (60 minutes). Create a new websocket connection to continue.",
                        ])))
            return false
        }
        guard let account = await state.account(id: session.accountID) else {
            try await outbound.write(
                .text(wrappedError(401, ["type": "invalid_request_error", "code": "token_invalidated", "message": "Unknown account."])))
            return false
        }
        switch await backend.startTurn(account: account, body: Data(text.utf8), rewordedReplay: divergentReplay) {
        case .failure(let refusal):
            try await outbound.write(.text(wrapped(refusal.reply)))
            return true
        case .success(let turn):
            do {
                try await stream(turn.events, fault: fault, key: key, outbound: outbound)
            } catch is ClosedByFault {
                return false
            } catch {
                // The client went away mid-turn (a cancelled stream, a dropped network).
                await state.record(.turnsAborted)
                throw error
            }
            return true
        }
    }

    /// Sends a turn's events, one text frame each, as the fault says.
    private func stream(_ events: [StreamEvent], fault: Fault.Kind?, key: String, outbound: WebSocketOutboundWriter) async throws {
        for (index, event) in events.enumerated() {
            if case .slowStream(let seconds)? = fault, index > 0 { try await Task.sleep(for: .milliseconds(Int(seconds * 1000))) }
            switch fault {
            case .dropSocket(let afterEvents, let divergent)? where index == afterEvents:
                await state.rememberDroppedTurn(key, divergent: divergent)
                throw ClosedByFault()
            case .badEvent? where index == 2:
                try await outbound.write(.text(StreamEvent.truncatedDelta.data))
            case .binaryFrame(let afterEvents)? where index == afterEvents:
                try await outbound.write(.binary(ByteBuffer(bytes: [0x00, 0xFF])))
                throw ClosedByFault()
            default:
                try await outbound.write(.text(event.data))
            }
        }
    }

    /// A reply as the WebSocket's wrapped error: `{"type":"error","status",…,"error",…,"headers",…}`.
    private func wrapped(_ reply: Reply) -> String {
        guard case .bytes(let body) = reply.body,
            let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any], let error = object["error"] as? [String: Any]
        else { return wrappedError(reply.status, ["message": "HTTP \(reply.status)"]) }
        var headers: [String: String] = [:]
        for (name, value) in reply.headers where name.lowercased().hasPrefix("x-codex-") { headers[name.lowercased()] = value }
        return wrappedError(reply.status, error, headers: headers)
    }
}

/// A fault ended the turn early, on purpose.
private struct ClosedByFault: Error {}

/// `{"type":"error","status":…,"error":…,"headers":…}` as text.
private func wrappedError(_ status: Int, _ error: [String: Any], headers: [String: String] = [:]) -> String {
    let object: [String: Any] = ["type": "error", "status": status, "error": error, "headers": headers]
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

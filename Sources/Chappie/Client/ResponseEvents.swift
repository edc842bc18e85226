package import ChappieCore
import ChappieNet
import ChappieStore
import Foundation

/// The text a turn has delivered, and where a replay of it has got to.
///
/// A reconnect (or the HTTP/SSE retry after the fall-back) makes the server stream the turn from its
/// start. Deltas that repeat delivered text are dropped; the part of a delta past it is delivered; a
/// delta that contradicts it ends the turn with `streamingTransportReplayDiverged`.
struct ReplayGuard {
    /// Everything delivered so far, as UTF-8.
    private(set) var delivered: [UInt8] = []
    /// How much of `delivered` the current attempt has repeated.
    private var position = 0
    /// Events other than text deltas delivered so far, and how many of them this attempt has repeated.
    private var deliveredEvents = 0
    private var eventPosition = 0

    /// The text delivered so far.
    var deliveredText: String { String(decoding: delivered, as: UTF8.self) }

    /// Whether any text of the turn reached the consumer: until then a broken attempt is a network
    /// failure, retried as one (the events before it are not delivered twice: see ``acceptEvent()``).
    var hasDelivered: Bool { !delivered.isEmpty }

    /// Whether the current attempt is still repeating delivered text.
    var isReplaying: Bool { position < delivered.count }

    /// A new attempt starts from the beginning of the turn.
    mutating func restart() {
        position = 0
        eventPosition = 0
    }

    /// Whether an event other than a text delta is new (not one a replay repeats); counts it.
    mutating func acceptEvent() -> Bool {
        eventPosition += 1
        guard eventPosition > deliveredEvents else { return false }
        deliveredEvents = eventPosition
        return true
    }

    /// The part of `delta` not delivered yet (empty while replaying).
    ///
    /// - Throws: `streamingTransportReplayDiverged` with the delivered text when `delta` differs from it.
    mutating func accept(_ delta: String) throws(ChappieClientError) -> String {
        let bytes = Array(delta.utf8)
        let overlap = min(bytes.count, delivered.count - position)
        if overlap > 0 {
            guard bytes[..<overlap].elementsEqual(delivered[position..<position + overlap]) else {
                throw .streamingTransportReplayDiverged(deliveredText)
            }
            position += overlap
        }
        guard overlap < bytes.count else { return "" }
        // The overlap ends where delivered text ended, on a character boundary of both.
        let fresh = bytes[overlap...]
        delivered += fresh
        position = delivered.count
        return String(decoding: fresh, as: UTF8.self)
    }
}

/// What one event of an attempt means for the turn.
enum ResponseEventOutcome {
    /// Keep reading.
    case more
    /// `response.completed`: the turn is done (the client then runs its tool calls, or completes).
    case completed
}

/// A failure that the turn may answer by retrying: an HTTP status (a response, a refused upgrade or
/// a wrapped WebSocket error), a broken WebSocket, or a network failure before any output.
enum AttemptFailure: Error {
    /// An HTTP status with its headers and body.
    case status(Int, headers: ChappieHTTPHeaders, body: Data, onUpgrade: Bool)
    /// The WebSocket failed in a way that counts toward the reconnect budget; `error` is what
    /// surfaces when no reconnect or fall-back remains.
    case webSocket(reason: String, error: ChappieClientError)
    /// The server closed the socket because it reached its 60-minute limit: open a new one.
    case connectionLimitReached
    /// The network failed before any output (HTTP/SSE).
    case network(String)
}

/// Reads the JSON events of a streamed reply (the SSE `data` or the WebSocket text frame), the same
/// way for both transports (docs/protocol.md §8.1, §8.2).
struct ResponseEventReader {
    /// Rate-limit events are usage readings: the reader needs the log only.
    let store: any UsageLog
    let account: Account
    let emit: (ChappieStreamEvent) -> Void
    private(set) var responseID: String?
    /// The usage `response.completed` reported for this turn.
    private(set) var usage: ChappieTokenUsage?
    /// The `function_call` items of the current attempt, in order: only the attempt that reaches
    /// `response.completed` decides which calls run (a replay may call with another `call_id`).
    private(set) var functionCalls: [FunctionCall] = []

    init(store: any UsageLog, account: Account, emit: @escaping (ChappieStreamEvent) -> Void) {
        self.store = store
        self.account = account
        self.emit = emit
    }

    /// Handles one event.
    ///
    /// - Throws: ``ChappieClientError`` for a failed or incomplete response or an unreadable event;
    ///   ``AttemptFailure`` for a wrapped WebSocket error with an HTTP status or the connection limit.
    mutating func read(_ data: String, type eventType: String?, replay: inout ReplayGuard) async throws -> ResponseEventOutcome {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] else {
            throw ChappieClientError.invalidResponse(
                "a \(eventType ?? "stream") event is not a JSON object (after \(replay.delivered.count) bytes of text)")
        }
        let type = object["type"] as? String ?? eventType ?? ""
        let body = object["response"] as? [String: Any]
        responseID = body?["id"] as? String ?? responseID
        // Every event reaches the consumer as `.raw` too, before what the SDK reads from it (once:
        // a replay's repeats are not delivered again).
        switch type {
        case "response.output_text.delta":
            if let delta = object["delta"] as? String, !delta.isEmpty {
                let fresh = try replay.accept(delta)
                if !fresh.isEmpty {
                    emit(.raw(type: type, payload: data))
                    emit(.textDelta(fresh))
                }
            } else if replay.acceptEvent() {
                // An empty delta is no text, but an event all the same.
                emit(.raw(type: type, payload: data))
            }
        case "codex.rate_limits":
            if replay.acceptEvent() {
                emit(.raw(type: type, payload: data))
                if let snapshot = ChappieUsageLimitSnapshot.fromRateLimitsEvent(object) {
                    try? await store.recordUsage([snapshot], for: account, source: .stream)
                    emit(.usageLimits(snapshot))
                }
            }
        case "response.output_item.done" where (object["item"] as? [String: Any])?["type"] as? String == "function_call":
            let item = object["item"] as? [String: Any] ?? [:]
            guard let callID = item["call_id"] as? String, let name = item["name"] as? String else {
                throw ChappieClientError.invalidResponse("a function_call item has no call_id or name")
            }
            // `arguments` is a JSON string (§8.1); an absent one is an empty object.
            functionCalls.append(FunctionCall(callID: callID, name: name, arguments: item["arguments"] as? String ?? "{}"))
            if replay.acceptEvent() { emit(.raw(type: type, payload: data)) }
        case "response.completed":
            // A replay that stops short of the delivered text does not complete it.
            guard !replay.isReplaying else { throw ChappieClientError.streamingTransportReplayDiverged(replay.deliveredText) }
            usage = ChappieTokenUsage(wire: body?["usage"])
            emit(.raw(type: type, payload: data))
            return .completed
        case _
        where (object["error"] as? [String: Any])?["code"] as? String == "websocket_connection_limit_reached"
            || (body?["error"] as? [String: Any])?["code"] as? String == "websocket_connection_limit_reached":
            emit(.raw(type: type, payload: data))
            throw AttemptFailure.connectionLimitReached
        case "error" where object["status"] != nil || object["status_code"] != nil:
            // A WebSocket's wrapped HTTP error (§7.1): handled as that status over HTTP.
            emit(.raw(type: type, payload: data))
            let status = WireNumber.integer(object["status"], in: 0...999) ?? WireNumber.integer(object["status_code"], in: 0...999) ?? 0
            var headers = ChappieHTTPHeaders()
            for (name, value) in object["headers"] as? [String: Any] ?? [:] {
                if let value = value as? String ?? (value as? NSNumber)?.stringValue { headers.add(name: name, value: value) }
            }
            let error = object["error"] ?? [:]
            let errorBody = (try? JSONSerialization.data(withJSONObject: ["error": error])) ?? Data()
            throw AttemptFailure.status(status, headers: headers, body: errorBody, onUpgrade: false)
        case "response.failed", "error":
            emit(.raw(type: type, payload: data))
            let error = body?["error"] as? [String: Any] ?? object["error"] as? [String: Any]
            throw ChappieClientError.responseFailed(
                ChappieResponse(
                    id: responseID, status: "failed", text: replay.deliveredText, errorCode: error?["code"] as? String,
                    errorMessage: error?["message"] as? String))
        case "response.incomplete":
            emit(.raw(type: type, payload: data))
            let reason = (body?["incomplete_details"] as? [String: Any])?["reason"] as? String
            throw ChappieClientError.responseFailed(
                ChappieResponse(
                    id: responseID, status: "incomplete", text: replay.deliveredText, errorCode: reason, errorMessage: "incomplete response"))
        default:
            // A replay repeats the events it delivered before: each is delivered once.
            if replay.acceptEvent() { emit(.raw(type: type, payload: data)) }
        }
        return .more
    }

    /// A new attempt streams the turn from its start: its calls are collected afresh.
    mutating func beginAttempt() {
        functionCalls = []
        usage = nil
    }

    /// The error of an attempt that ended before `response.completed`.
    func closedEarly(_ replay: ReplayGuard, code: String, message: String) -> ChappieClientError {
        .responseFailed(ChappieResponse(id: responseID, status: "incomplete", text: replay.deliveredText, errorCode: code, errorMessage: message))
    }
}

extension ChappieTokenUsage {
    /// `response.usage` (§8.1): input, cached, output and reasoning tokens; `nil` when absent or not
    /// an object. A count that is not a number from 0 to 2³¹−1 reads as 0 (a fraction is cut); a
    /// missing or null total is input and output together.
    package init?(wire value: Any?) {
        guard let usage = value as? [String: Any] else { return nil }
        func count(_ value: Any?) -> Int { WireNumber.integer(value, in: 0...Int(Int32.max)) ?? 0 }
        let input = count(usage["input_tokens"])
        let output = count(usage["output_tokens"])
        self.init(
            inputTokens: input, cachedInputTokens: count((usage["input_tokens_details"] as? [String: Any])?["cached_tokens"]),
            outputTokens: output, reasoningTokens: count((usage["output_tokens_details"] as? [String: Any])?["reasoning_tokens"]),
            totalTokens: usage["total_tokens"] == nil || usage["total_tokens"] is NSNull ? input + output : count(usage["total_tokens"]))
    }
}

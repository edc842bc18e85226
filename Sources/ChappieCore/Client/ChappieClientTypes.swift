public import Foundation

/// How the client retries 429s (usage limits included: the error surfaces once the retries are
/// spent), 5xx answers and network failures that happen before any output was delivered.
///
/// ```swift
/// let client = Chappie.client(rateLimitBackoff: ChappieRateLimitBackoffPolicy(maxRetries: 3, initialDelay: 1, maximumDelay: 15))
/// ```
public struct ChappieRateLimitBackoffPolicy: Sendable, Hashable {
    /// Retries before the error surfaces. Default 2.
    public var maxRetries: Int
    /// Seconds before the first retry; later retries double it. Default 1.
    public var initialDelay: TimeInterval
    /// The longest wait between retries, in seconds. Default 30.
    public var maximumDelay: TimeInterval
    /// Use the server's `Retry-After` (seconds or an HTTP date) instead of the computed delay when it
    /// sends one. `maximumDelay` bounds only the computed delay; ``maximumRetryAfter`` bounds this one.
    /// Default true.
    public var respectsRetryAfterHeader: Bool
    /// The longest `Retry-After` the client waits out, in seconds: a longer one is waited only this
    /// long (a server asking for an hour is not kept to inside one request). Default 300 (5 minutes).
    public var maximumRetryAfter: TimeInterval

    /// Creates a policy; the defaults are the documented ones.
    public init(
        maxRetries: Int = 2, initialDelay: TimeInterval = 1, maximumDelay: TimeInterval = 30, respectsRetryAfterHeader: Bool = true,
        maximumRetryAfter: TimeInterval = 300
    ) {
        self.maxRetries = maxRetries
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.respectsRetryAfterHeader = respectsRetryAfterHeader
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// The default policy.
    public static let `default` = ChappieRateLimitBackoffPolicy()
    /// No retries: the first failure surfaces.
    public static let disabled = ChappieRateLimitBackoffPolicy(maxRetries: 0)

    /// The wait before retry `attempt` (1-based): the server's `Retry-After` when allowed and given
    /// (at most ``maximumRetryAfter``), else `initialDelay × 2^(attempt−1)`, at most `maximumDelay`.
    public func delay(forAttempt attempt: Int, retryAfter: TimeInterval?) -> TimeInterval {
        if respectsRetryAfterHeader, let retryAfter { return min(max(0, retryAfter), maximumRetryAfter) }
        return min(initialDelay * pow(2, Double(max(0, attempt - 1))), maximumDelay)
    }
}

/// Which transport streams replies (docs/sdk.md).
///
/// With the default policy every streaming request opens a WebSocket to
/// `wss://…/backend-api/codex/responses`. A turn whose socket fails (refused upgrade, drop, binary
/// frame, close before `response.completed`) reconnects, up to `maxWebSocketReconnectionAttempts`
/// times; replayed text is not delivered twice. When reconnects are exhausted the client streams
/// over HTTP/SSE for the rest of its life, or fails when `fallsBackToHTTPSSE` is false.
///
/// ```swift
/// let client = Chappie.client(streamingTransportPolicy: .httpSSEOnly)
/// ```
public struct ChappieStreamingTransportPolicy: Sendable, Hashable {
    /// Try WebSocket first. Default true.
    public var prefersWebSocket: Bool
    /// WebSocket reconnection attempts within a turn before falling back (a turn makes at most
    /// 1 + this many WebSocket attempts). Default 5.
    public var maxWebSocketReconnectionAttempts: Int
    /// Fall back to HTTP/SSE when WebSocket cannot recover. Default true.
    public var fallsBackToHTTPSSE: Bool

    /// Creates a policy.
    public init(prefersWebSocket: Bool = true, maxWebSocketReconnectionAttempts: Int = 5, fallsBackToHTTPSSE: Bool = true) {
        self.prefersWebSocket = prefersWebSocket
        self.maxWebSocketReconnectionAttempts = maxWebSocketReconnectionAttempts
        self.fallsBackToHTTPSSE = fallsBackToHTTPSSE
    }

    /// WebSocket first, five reconnects, then HTTP/SSE.
    public static let `default` = ChappieStreamingTransportPolicy()
    /// HTTP/SSE only: no socket is ever opened.
    public static let httpSSEOnly = ChappieStreamingTransportPolicy(
        prefersWebSocket: false, maxWebSocketReconnectionAttempts: 0, fallsBackToHTTPSSE: true)
}

/// The transport a client streams over.
public enum ChappieStreamingTransport: String, Sendable, Hashable {
    /// One WebSocket per streaming request (`wss://…/codex/responses`).
    case webSocket = "websocket"
    /// `POST …/codex/responses` answered with server-sent events.
    case httpSSE = "sse"
}

/// One message of the conversation.
public struct ChappieInputMessage: Sendable, Hashable {
    /// Who says it.
    public enum Role: String, Sendable, Hashable {
        /// The person asking.
        case user
        /// The model's earlier replies.
        case assistant
        /// The developer's instructions within the conversation.
        case developer
        /// System instructions.
        case system
    }

    /// Who says it.
    public var role: Role
    /// What is said.
    public var text: String

    /// Creates a message.
    public init(role: Role = .user, text: String) {
        self.role = role
        self.text = text
    }
}

/// A full request: model, instructions, messages and per-request options (docs/protocol.md §8.1).
public struct ChappieResponseRequest: Sendable, Hashable {
    /// Reasoning effort.
    public enum ReasoningEffort: String, Sendable, Hashable, CaseIterable {
        /// As little reasoning as the model allows.
        case minimal
        /// Little reasoning.
        case low
        /// The model's usual amount.
        case medium
        /// The most reasoning.
        case high
    }

    /// The model slug. Default `gpt-5-codex`.
    public var model: String
    /// The system prompt; omitted when empty.
    public var instructions: String
    /// The conversation.
    public var input: [ChappieInputMessage]
    /// Reasoning effort, when set.
    public var reasoningEffort: ReasoningEffort?
    /// The service tier (such as `priority`), when set.
    public var serviceTier: String?
    /// Whether the model may use the web search tool.
    public var allowsSearch: Bool
    /// Fast mode: `priority` service tier and low reasoning effort unless set otherwise.
    public var fastMode: Bool

    /// Creates a request.
    public init(
        model: String = "gpt-5-codex", instructions: String = "", input: [ChappieInputMessage],
        reasoningEffort: ReasoningEffort? = nil, serviceTier: String? = nil, allowsSearch: Bool = false, fastMode: Bool = false
    ) {
        self.model = model
        self.instructions = instructions
        self.input = input
        self.reasoningEffort = reasoningEffort
        self.serviceTier = serviceTier
        self.allowsSearch = allowsSearch
        self.fastMode = fastMode
    }
}

/// One event of a streamed reply.
public enum ChappieStreamEvent: Sendable, Hashable {
    /// The next piece of text (in order, never empty).
    case textDelta(String)
    /// Usage windows: from the response headers (first) and from `codex.rate_limits` events.
    case usageLimits(ChappieUsageLimitSnapshot)
    /// The model called a host tool; the client is about to apply its policy and run it.
    case toolCallRequested(ChappieToolExecutionRequest)
    /// A call to a tool whose policy is `.ask` waits for the client's `toolApprovalHandler`.
    case approvalRequested(ChappieApprovalRequest)
    /// A tool call ended (completed, failed, denied or cancelled); a completed call's output goes
    /// back to the model in a follow-up turn.
    case toolCallCompleted(ChappieToolExecutionResult)
    /// The model finished (after any tool rounds); the stream ends after it.
    case completed(ChappieResponse)
    /// Any other event, as its type and its JSON payload.
    case raw(type: String, payload: String)
}

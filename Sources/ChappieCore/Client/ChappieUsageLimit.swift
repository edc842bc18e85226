public import Foundation

/// What a 429 `usage_limit_reached` reply says (docs/protocol.md §7.1), for
/// ``ChappieClientError/usageLimitReached(_:)``.
public struct ChappieUsageLimit: Sendable, Hashable {
    /// The error type, normally `usage_limit_reached`.
    public var type: String
    /// A message safe to show.
    public var message: String?
    /// The plan when the limit was reached.
    public var plan: ChappiePlan?
    /// When the quota resets.
    public var resetsAt: Date?
    /// Seconds until it resets, as the server said at the time.
    public var resetsInSeconds: TimeInterval?
    /// The windows from the reply's rate-limit headers, when sent.
    public var rateLimit: ChappieUsageLimitSnapshot?

    /// Creates a usage limit.
    public init(
        type: String, message: String?, plan: ChappiePlan?, resetsAt: Date?, resetsInSeconds: TimeInterval?,
        rateLimit: ChappieUsageLimitSnapshot?
    ) {
        self.type = type
        self.message = message
        self.plan = plan
        self.resetsAt = resetsAt
        self.resetsInSeconds = resetsInSeconds
        self.rateLimit = rateLimit
    }

    /// The window that is full, named for people: "5-hour" or "weekly", when the headers tell.
    public var windowName: String? {
        guard let rateLimit else { return nil }
        let full = [rateLimit.shortWindow, rateLimit.longWindow].compactMap { $0 }.filter { $0.usedPercent >= 100 }
        guard let window = full.first ?? rateLimit.bindingWindow else { return nil }
        return window.kind.label
    }
}

/// A response as the stream reported it: its id, status, the text so far, and any error.
public struct ChappieResponse: Sendable, Hashable {
    /// The response id (`resp_…`), when known.
    public var id: String?
    /// `completed`, `failed`, `incomplete`, ….
    public var status: String
    /// The text delivered so far.
    public var text: String
    /// The error code (`server_is_overloaded`, `stream_closed`, …), when failed.
    public var errorCode: String?
    /// The error message, when failed.
    public var errorMessage: String?
    /// The tokens the model used, from `response.completed` (summed over a request's tool rounds);
    /// `nil` when the server did not say.
    public var usage: ChappieTokenUsage?

    /// Creates a response.
    public init(id: String?, status: String, text: String, errorCode: String?, errorMessage: String?, usage: ChappieTokenUsage? = nil) {
        self.id = id
        self.status = status
        self.text = text
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.usage = usage
    }
}

/// The tokens a response used, as `response.completed` reports them (docs/protocol.md §8.1): what a
/// client counts per account.
public struct ChappieTokenUsage: Sendable, Hashable, Codable {
    /// Tokens of the input, cached ones included.
    public var inputTokens: Int
    /// Of the input tokens, those served from the prompt cache.
    public var cachedInputTokens: Int
    /// Tokens the model wrote, reasoning included.
    public var outputTokens: Int
    /// Of the output tokens, those spent reasoning.
    public var reasoningTokens: Int
    /// Input and output together.
    public var totalTokens: Int

    /// Creates a usage.
    public init(inputTokens: Int = 0, cachedInputTokens: Int = 0, outputTokens: Int = 0, reasoningTokens: Int = 0, totalTokens: Int? = nil) {
        self.inputTokens = inputTokens
        self.cachedInputTokens = cachedInputTokens
        self.outputTokens = outputTokens
        self.reasoningTokens = reasoningTokens
        self.totalTokens = totalTokens ?? inputTokens + outputTokens
    }

    /// Two turns' usage together (a request with tool rounds is several turns). Saturating: a
    /// hostile count cannot trap.
    public static func + (lhs: ChappieTokenUsage, rhs: ChappieTokenUsage) -> ChappieTokenUsage {
        func sum(_ a: Int, _ b: Int) -> Int { a.addingReportingOverflow(b).overflow ? .max : a + b }
        return ChappieTokenUsage(
            inputTokens: sum(lhs.inputTokens, rhs.inputTokens), cachedInputTokens: sum(lhs.cachedInputTokens, rhs.cachedInputTokens),
            outputTokens: sum(lhs.outputTokens, rhs.outputTokens), reasoningTokens: sum(lhs.reasoningTokens, rhs.reasoningTokens),
            totalTokens: sum(lhs.totalTokens, rhs.totalTokens))
    }
}

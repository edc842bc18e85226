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

    /// Creates a response.
    public init(id: String?, status: String, text: String, errorCode: String?, errorMessage: String?) {
        self.id = id
        self.status = status
        self.text = text
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }
}

public import ChappieCore
public import ChappieStore
import Foundation

/// Which account an SDK session or client uses, where the store is, which services it talks to,
/// and how a client streams and retries.
///
/// Several configurations with different `account` names are several accounts.
///
/// ```swift
/// let configuration = ChappieConfiguration(streamingTransportPolicy: .httpSSEOnly)
/// let authSession = await Chappie.authSession(configuration: configuration)
/// let client = Chappie.client(configuration: configuration)
/// ```
public struct ChappieConfiguration: Sendable {
    /// The account slot (what the Keychain slot is on Apple platforms).
    public var account: AccountName
    /// Where the store is and where its key comes from (by default: the environment's).
    public var store: StoreOptions
    /// The issuer and backend; the real ones by default.
    public var endpoints: ChappieEndpoints
    /// Tokens expiring within this margin are refreshed before use. Default: 5 minutes.
    public var refreshMargin: Duration
    /// WebSocket first with fallback to HTTP/SSE, or HTTP/SSE only. Default: ``ChappieStreamingTransportPolicy/default``.
    public var streamingTransportPolicy: ChappieStreamingTransportPolicy
    /// How 429s, 5xx answers and failures before output are retried. Default: ``ChappieRateLimitBackoffPolicy/default``.
    public var rateLimitBackoff: ChappieRateLimitBackoffPolicy
    /// The wait before a turn's first WebSocket reconnect; each further one doubles it, up to 5
    /// seconds (as the Codex CLI does). Default: 200 milliseconds.
    public var webSocketReconnectDelay: Duration
    /// How long a device-code sign-in polls for approval before it fails with
    /// ``ChappieAuthError/pollingTimeout``. Default: 15 minutes (as the Codex CLI).
    public var deviceCodePollingTimeout: Duration
    /// How long the code exchange after approval may take before the sign-in fails with
    /// ``ChappieAuthError/callbackTimeout``. Default: 30 seconds.
    public var callbackTimeout: Duration
    /// The tools the model may call, run by the client (see ``ChappieHostTool``). Default: none.
    public var hostTools: [ChappieHostTool]
    /// Answers calls to `.ask` tools; without one, such calls are denied. Default: none.
    public var toolApprovalHandler: ChappieToolApprovalHandler?
    /// Tool rounds (a turn that calls tools, answered by a follow-up turn) one request may take
    /// before it stops with ``ChappieClientError/toolLoopLimitExceeded(_:)``. Default: 8.
    public var toolLoopLimit: Int

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - account: The account slot; `default` unless given.
    ///   - store: Store location and key source; from the environment by default.
    ///   - endpoints: The services; the real ones by default.
    ///   - refreshMargin: How early to refresh; 5 minutes by default.
    ///   - streamingTransportPolicy: Which transport streams; WebSocket first by default.
    ///   - rateLimitBackoff: How failures are retried; 2 retries from 1 second by default.
    ///   - hostTools: The tools the model may call; none by default.
    ///   - toolApprovalHandler: Answers calls to `.ask` tools; none by default (they are denied).
    ///   - toolLoopLimit: Tool rounds one request may take; 8 by default.
    public init(
        account: AccountName = Self.defaultAccount, store: StoreOptions = StoreOptions(),
        endpoints: ChappieEndpoints = ChappieEndpoints(), refreshMargin: Duration = .seconds(300),
        streamingTransportPolicy: ChappieStreamingTransportPolicy = .default, rateLimitBackoff: ChappieRateLimitBackoffPolicy = .default,
        hostTools: [ChappieHostTool] = [], toolApprovalHandler: ChappieToolApprovalHandler? = nil, toolLoopLimit: Int = 8
    ) {
        self.account = account
        self.store = store
        self.endpoints = endpoints
        self.refreshMargin = refreshMargin
        self.streamingTransportPolicy = streamingTransportPolicy
        self.rateLimitBackoff = rateLimitBackoff
        self.webSocketReconnectDelay = .milliseconds(200)
        self.deviceCodePollingTimeout = .seconds(15 * 60)
        self.callbackTimeout = .seconds(30)
        self.hostTools = hostTools
        self.toolApprovalHandler = toolApprovalHandler
        self.toolLoopLimit = toolLoopLimit
    }

    /// The slot named `default`.
    public static let defaultAccount: AccountName = {
        // "default" follows the name rule.
        guard let name = try? AccountName("default") else { preconditionFailure("\"default\" is a valid account name") }
        return name
    }()
}

public import Foundation

/// A function the model may call, run on this machine by the client (docs/sdk.md).
///
/// The client sends each registered tool's name, description and parameter schema with every
/// request. When the model calls one, the client emits ``ChappieStreamEvent/toolCallRequested(_:)``,
/// applies the tool's ``Policy``, runs the handler, emits
/// ``ChappieStreamEvent/toolCallCompleted(_:)`` and sends the output back to the model in a
/// follow-up turn, until the model answers without calling a tool.
///
/// ```swift
/// let clock = ChappieHostTool(
///     name: "get_time", description: "The current time in a time zone.",
///     parameters: ["type": "object", "properties": ["zone": ["type": "string"]], "required": ["zone"]]
/// ) { request in
///     let arguments = try request.decodeArguments(as: [String: String].self)
///     return "It is noon in \(arguments["zone"] ?? "UTC")."
/// }
/// ```
public struct ChappieHostTool: Sendable {
    /// Whether a call runs on its own, asks first, or never runs.
    public enum Policy: String, Sendable, Hashable, CaseIterable {
        /// Runs without asking.
        case automatic
        /// Emits ``ChappieStreamEvent/approvalRequested(_:)`` and runs only when the client's
        /// `toolApprovalHandler` answers ``ChappieApprovalDecision/approved(remember:)``.
        case ask
        /// Never runs: every call is denied (``ChappieClientError/toolDenied(_:_:)``).
        case deny
    }

    /// What a handler is: the call in, the output for the model out. A thrown error fails the call
    /// (``ChappieClientError/toolFailed(_:_:)``, with the error's description).
    public typealias Handler = @Sendable (ChappieToolExecutionRequest) async throws -> String

    /// The name the model calls it by: letters, digits, `_` and `-`, at most 64 characters.
    public let name: String
    /// What it does, for the model.
    public let description: String
    /// A JSON schema of its arguments (an object schema).
    public let parameters: ChappieJSONValue
    /// Whether calls run on their own, ask, or are denied. Default ``Policy/automatic``.
    public let policy: Policy
    /// Runs a call.
    public let handler: Handler

    /// Creates a tool.
    ///
    /// - Parameters:
    ///   - name: The name the model calls it by (letters, digits, `_`, `-`; 1 to 64 characters).
    ///   - description: What it does, for the model.
    ///   - parameters: A JSON schema of its arguments; by default an object with no properties.
    ///   - policy: Whether calls run on their own, ask first, or are denied.
    ///   - handler: Runs a call and returns the output the model reads.
    public init(
        name: String, description: String, parameters: ChappieJSONValue = ["type": "object", "properties": [:]],
        policy: Policy = .automatic, handler: @escaping Handler
    ) {
        self.name = name
        self.description = description
        self.parameters = parameters
        self.policy = policy
        self.handler = handler
    }

    /// Whether `name` is one the Responses API accepts for a function (`^[a-zA-Z0-9_-]{1,64}$`).
    public static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }
}

/// A call the model made to a host tool.
public struct ChappieToolExecutionRequest: Sendable, Hashable {
    /// The call's id (`call_id`), which its output answers.
    public let callID: String
    /// The tool's name.
    public let name: String
    /// The arguments as the model wrote them: a JSON string (usually an object).
    public let arguments: String
    /// The policy that applies to the call.
    public let policy: ChappieHostTool.Policy

    /// Creates a request (the client does, from the model's `function_call`).
    public init(callID: String, name: String, arguments: String, policy: ChappieHostTool.Policy) {
        self.callID = callID
        self.name = name
        self.arguments = arguments
        self.policy = policy
    }

    /// The arguments decoded as `type`.
    ///
    /// - Throws: `DecodingError` when the model's JSON does not fit `type` (the call then fails
    ///   with that description, if the handler lets it through).
    public func decodeArguments<Arguments: Decodable>(as type: Arguments.Type) throws -> Arguments {
        try JSONDecoder().decode(type, from: Data(arguments.utf8))
    }
}

/// What became of a tool call.
public struct ChappieToolExecutionResult: Sendable, Hashable {
    /// How the call ended.
    public enum Status: String, Sendable, Hashable {
        /// The handler returned its output.
        case completed
        /// The handler threw; the output is the error's description.
        case failed
        /// The policy or the approval handler said no; the output is the reason.
        case denied
        /// The stream was cancelled while the call waited or ran.
        case cancelled
    }

    /// The call.
    public let request: ChappieToolExecutionRequest
    /// How it ended.
    public let status: Status
    /// The handler's output, or why there is none.
    public let output: String
    /// When the call started (after any approval).
    public let startedAt: Date
    /// How long the handler ran (zero when it did not run).
    public let duration: Duration

    /// Creates a result (the client does).
    public init(request: ChappieToolExecutionRequest, status: Status, output: String, startedAt: Date, duration: Duration) {
        self.request = request
        self.status = status
        self.output = output
        self.startedAt = startedAt
        self.duration = duration
    }
}

/// A call to a tool whose policy is ``ChappieHostTool/Policy/ask``, waiting for an answer from the
/// client's `toolApprovalHandler`.
public struct ChappieApprovalRequest: Sendable, Hashable {
    /// The call waiting for approval.
    public let request: ChappieToolExecutionRequest
    /// The tool's description, to show beside the arguments.
    public let toolDescription: String

    /// Creates an approval request (the client does).
    public init(request: ChappieToolExecutionRequest, toolDescription: String) {
        self.request = request
        self.toolDescription = toolDescription
    }
}

/// The answer to a ``ChappieApprovalRequest``.
public enum ChappieApprovalDecision: Sendable, Hashable {
    /// Run the call. With `remember`, later calls of the same tool on this client run without
    /// asking.
    case approved(remember: Bool = false)
    /// Do not run it; the reason is reported in the result and in
    /// ``ChappieClientError/toolDenied(_:_:)``. `.denied()` gives ``defaultDenialReason``.
    case denied(String = ChappieApprovalDecision.defaultDenialReason)

    /// The reason of a `.denied()` that gives none.
    public static let defaultDenialReason = "the user declined it"
}

/// Answers approval requests for `.ask` tools; it may wait as long as it needs (for a person at a
/// terminal, say). Cancelling the stream cancels the wait.
public typealias ChappieToolApprovalHandler = @Sendable (ChappieApprovalRequest) async -> ChappieApprovalDecision

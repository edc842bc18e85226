import ChappieCore
import Foundation
import Synchronization

/// One item of the `input` a request sends (docs/protocol.md §8.1, tool items): the HTTP path is
/// stateless, so each follow-up turn sends the whole conversation again.
enum ConversationItem: Sendable {
    /// A message.
    case message(ChappieInputMessage)
    /// A call the model made (`id` is never re-sent).
    case functionCall(FunctionCall)
    /// A call's output.
    case functionCallOutput(callID: String, output: String)
}

/// A `function_call` item of a response: `arguments` is a JSON string.
struct FunctionCall: Sendable, Hashable {
    let callID: String
    let name: String
    let arguments: String
}

/// Runs the model's tool calls with the client's tools and policies, reporting each step as events.
final class HostToolRunner: Sendable {
    let tools: [String: ChappieHostTool]
    let approvalHandler: ChappieToolApprovalHandler?
    /// Tools an approval said to remember: they run without asking for the client's life.
    let remembered: Mutex<Set<String>>

    init(configuration: ChappieConfiguration) {
        tools = Dictionary(configuration.hostTools.map { ($0.name, $0) }) { first, _ in first }
        approvalHandler = configuration.toolApprovalHandler
        remembered = Mutex([])
    }

    /// Checks the tools before anything is sent.
    ///
    /// - Throws: ``ChappieClientError/invalidConfiguration(_:)`` for a name the API refuses, a name
    ///   given twice, or a negative loop limit.
    static func validate(_ configuration: ChappieConfiguration) throws(ChappieClientError) {
        var seen = Set<String>()
        for tool in configuration.hostTools {
            guard ChappieHostTool.isValidName(tool.name) else {
                throw .invalidConfiguration("the host tool name \"\(tool.name.prefix(80))\" is not 1 to 64 letters, digits, _ or -")
            }
            guard seen.insert(tool.name).inserted else {
                throw .invalidConfiguration("two host tools are named \(tool.name)")
            }
        }
        guard configuration.toolLoopLimit >= 0 else {
            throw .invalidConfiguration("toolLoopLimit is \(configuration.toolLoopLimit); it must be 0 or more")
        }
    }

    /// The `tools` of a request: each host tool as a function (§8.1).
    var definitions: [[String: Any]] {
        tools.values.sorted { $0.name < $1.name }.map { tool in
            ["type": "function", "name": tool.name, "description": tool.description, "strict": false, "parameters": tool.parameters.foundationObject]
        }
    }

    /// Runs one call and returns its output for the model.
    ///
    /// Emits `.toolCallRequested`, `.approvalRequested` for an `.ask` tool, then `.toolCallCompleted`.
    ///
    /// - Throws: ``ChappieClientError/toolNotRegistered(_:)`` (before any event),
    ///   ``ChappieClientError/toolDenied(_:_:)`` or ``ChappieClientError/toolFailed(_:_:)`` (after
    ///   `.toolCallCompleted` reports it), `CancellationError` when the stream is cancelled while the
    ///   call waits or runs (after a `.cancelled` result).
    func run(_ call: FunctionCall, emit: (ChappieStreamEvent) -> Void) async throws -> String {
        guard let tool = tools[call.name] else { throw ChappieClientError.toolNotRegistered(call.name) }
        let request = ChappieToolExecutionRequest(callID: call.callID, name: call.name, arguments: call.arguments, policy: tool.policy)
        emit(.toolCallRequested(request))
        func finish(_ status: ChappieToolExecutionResult.Status, _ output: String, startedAt: Date = Date(), duration: Duration = .zero) {
            emit(
                .toolCallCompleted(
                    ChappieToolExecutionResult(request: request, status: status, output: output, startedAt: startedAt, duration: duration)))
        }
        let denial = await denial(of: request, tool: tool, emit: emit)
        if Task.isCancelled {
            finish(.cancelled, "the stream was cancelled before the tool ran")
            throw CancellationError()
        }
        if let reason = denial {
            finish(.denied, reason)
            throw ChappieClientError.toolDenied(call.name, reason)
        }
        let startedAt = Date()
        let clock = ContinuousClock()
        let start = clock.now
        do {
            let output = try await tool.handler(request)
            try Task.checkCancellation()
            finish(.completed, output, startedAt: startedAt, duration: clock.now - start)
            return output
        } catch {
            guard !Task.isCancelled else {
                finish(.cancelled, "the stream was cancelled while the tool ran", startedAt: startedAt, duration: clock.now - start)
                throw CancellationError()
            }
            let message = (error as? any LocalizedError)?.errorDescription ?? String(describing: error)
            finish(.failed, message, startedAt: startedAt, duration: clock.now - start)
            throw ChappieClientError.toolFailed(call.name, message)
        }
    }

    /// Why the call may not run, or `nil` when it may: the tool's policy, then for `.ask` the
    /// approval handler's answer (remembered approvals skip the question).
    private func denial(of request: ChappieToolExecutionRequest, tool: ChappieHostTool, emit: (ChappieStreamEvent) -> Void) async -> String? {
        switch tool.policy {
        case .automatic:
            return nil
        case .deny:
            return "the tool's policy is deny"
        case .ask:
            if remembered.withLock({ $0.contains(tool.name) }) { return nil }
            guard let approvalHandler else { return "no toolApprovalHandler is registered to approve it" }
            let approval = ChappieApprovalRequest(request: request, toolDescription: tool.description)
            // In the stream before the handler is asked, so that a UI can show its prompt from it.
            emit(.approvalRequested(approval))
            // A stream cancelled while the handler waits (for a person, say) ends the call at once,
            // `.cancelled`, whether or not the handler heeds the cancellation.
            // Cancelled: `run` sees the task cancelled and reports the call so.
            guard let decision = await Task(operation: { await approvalHandler(approval) }).resultUnlessCancelled()?.get() else { return nil }
            switch decision {
            case .approved(let remember):
                if remember { remembered.withLock { _ = $0.insert(tool.name) } }
                return nil
            case .denied(let reason):
                return reason
            }
        }
    }
}

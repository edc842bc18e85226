import Foundation

/// The scripted model for host tools: turns queued through `/_emulator/tools/script` ask for a named
/// tool; the follow-up request must carry each call with its `function_call_output`
/// (docs/protocol.md §8.1, tool items), and is answered with text that quotes the output, or with
/// the next call while the script has rounds left. A follow-up that continues a response
/// (`previous_response_id`, as Codex 0.163 sends over the WebSocket) carries only the output: the
/// call is in the response it continues, and a call this model issued is taken as such.
struct ToolScripts {
    /// A queued script: which tool the model calls, with what, and for how many rounds (`nil`: forever).
    struct Script: Sendable {
        var name: String
        var arguments: String
        var rounds: Int?
    }

    /// What the model does with a request.
    enum Step: Sendable, Hashable {
        /// Calls a tool.
        case call(callID: String, name: String, arguments: String)
        /// Answers with text.
        case answer(String)
        /// Refuses the request (400), as the real API does for an output without its call.
        case refuse(String)
    }

    private struct Issued {
        var script: Script
        var round: Int
    }

    private var queue: [Script] = []
    private var issued: [String: Issued] = [:]
    /// The step each conversation got, so a replayed request (a reconnect, the fall-back to HTTP)
    /// is answered the same way.
    private var steps: [[JSONInput]: Step] = [:]
    private(set) var callsIssued = 0
    private(set) var outputsAccepted = 0
    private(set) var outputsRefused = 0
    /// The function tools the latest request declared (`{"type":"function","name",…,"parameters":{…}}`).
    private(set) var declaredTools: [String] = []

    mutating func enqueue(_ script: Script) {
        queue.append(script)
    }

    mutating func clear() {
        queue.removeAll()
    }

    var queued: Int { queue.count }

    /// The step for a request's `input` in a conversation (its `prompt_cache_key`), or `nil` when
    /// no script applies (the usual echo). The same request in the same conversation gets the same step.
    mutating func step(for input: JSONInput?, conversation: JSONInput?, tools: JSONInput?, continuing: Bool = false) -> Step? {
        if case .array(let tools)? = tools {
            declaredTools = tools.compactMap { tool in
                guard case .object(let fields) = tool, case .string("function")? = fields["type"], case .string(let name)? = fields["name"],
                    case .object? = fields["parameters"]
                else { return nil }
                return name
            }
        }
        guard case .array(let items)? = input else { return nil }
        let key = [conversation ?? .null, .array(items)]
        if let earlier = steps[key] { return earlier }
        let step = decide(items, continuing: continuing)
        if let step {
            if steps.count >= 4096 { steps.removeAll() }
            steps[key] = step
        }
        return step
    }

    /// A divergent replay of a call (the `drop_socket` fault's `divergent`): the same script calls
    /// again with a new `call_id`, which the conversation keeps from now on.
    mutating func reissue(for input: JSONInput?, conversation: JSONInput?, replacing callID: String) -> Step? {
        guard case .array(let items)? = input, let call = issued[callID] else { return nil }
        let step = issue(call.script, round: call.round)
        steps[[conversation ?? .null, .array(items)]] = step
        return step
    }

    private mutating func decide(_ items: [JSONInput], continuing: Bool) -> Step? {
        var calls: [String: String] = [:]
        var outputs: [(callID: String, output: String)] = []
        for case .object(let item) in items {
            switch (item["type"], item["call_id"]) {
            case (.string("function_call")?, .string(let callID)?):
                if case .string(let name)? = item["name"] { calls[callID] = name }
            case (.string("function_call_output")?, .string(let callID)?):
                outputs.append((callID, Self.text(item["output"])))
                // The call is in the response this request continues.
                if continuing, calls[callID] == nil, let call = issued[callID] { calls[callID] = call.script.name }
            default:
                continue
            }
        }
        for output in outputs where calls[output.callID] == nil || issued[output.callID] == nil {
            outputsRefused += 1
            return .refuse("No tool call found for function call output with call_id \(output.callID).")
        }
        if let unanswered = calls.keys.sorted().first(where: { id in !outputs.contains { $0.callID == id } }) {
            outputsRefused += 1
            return .refuse("No tool output found for function call \(unanswered).")
        }
        guard case .object(let last)? = items.last, case .string("function_call_output")? = last["type"],
            let answered = outputs.last, let call = issued[answered.callID]
        else {
            guard !queue.isEmpty else { return nil }
            return issue(queue.removeFirst(), round: 1)
        }
        outputsAccepted += 1
        if let rounds = call.script.rounds, call.round >= rounds {
            return .answer("The tool \(call.script.name) returned: \(answered.output)")
        }
        return issue(call.script, round: call.round + 1)
    }

    private mutating func issue(_ script: Script, round: Int) -> Step {
        let callID = "call_" + String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(24).lowercased())
        issued[callID] = Issued(script: script, round: round)
        callsIssued += 1
        return .call(callID: callID, name: script.name, arguments: script.arguments)
    }

    /// A `function_call_output`'s output: a string, or the texts of content items.
    private static func text(_ output: JSONInput?) -> String {
        switch output {
        case .string(let text)?:
            return text
        case .array(let parts)?:
            return parts.compactMap { part -> String? in
                guard case .object(let fields) = part, case .string(let text)? = fields["text"] else { return nil }
                return text
            }.joined(separator: "\n")
        default:
            return ""
        }
    }
}

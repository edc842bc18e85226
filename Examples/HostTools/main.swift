// An example program for the Chappie SDK's host tools: it signs an account in with the device code
// (once), registers two tools — `get_time` runs on its own, `list_directory` asks at the terminal
// first — and streams the model's replies to each prompt, showing every tool step.
//
//     chappie-example-host-tools --issuer URL --backend URL [--home DIR] PROMPT…
//
// `make example` runs it against the emulator, whose scripted model calls the tools; against the
// real service leave out --issuer and --backend.
import Chappie
import Foundation

/// The two tools: one automatic, one that asks.
func exampleTools() -> [ChappieHostTool] {
    struct ZoneArguments: Decodable { let zone: String }
    struct PathArguments: Decodable { let path: String }
    let clock = ChappieHostTool(
        name: "get_time", description: "The current time in an IANA time zone, such as Europe/Paris.",
        parameters: ["type": "object", "properties": ["zone": ["type": "string"]], "required": ["zone"]]
    ) { request in
        let zone = try request.decodeArguments(as: ZoneArguments.self).zone
        guard let timeZone = TimeZone(identifier: zone) else { throw ExampleError("unknown time zone \(zone)") }
        var style = Date.FormatStyle(date: .omitted, time: .shortened)
        style.timeZone = timeZone
        return "It is \(Date().formatted(style)) in \(zone)."
    }
    let lister = ChappieHostTool(
        name: "list_directory", description: "Lists the names in a directory on this machine.",
        parameters: ["type": "object", "properties": ["path": ["type": "string"]], "required": ["path"]],
        policy: .ask
    ) { request in
        let path = try request.decodeArguments(as: PathArguments.self).path
        let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        return names.isEmpty ? "\(path) is empty." : names.joined(separator: "\n")
    }
    return [clock, lister]
}

/// Writes to standard output at once (`print` buffers when the output is a pipe, and the question
/// must appear before the answer is read).
func say(_ text: String, terminator: String = "\n") {
    FileHandle.standardOutput.write(Data((text + terminator).utf8))
}

/// A failure of a tool, with a message for the model and the user.
struct ExampleError: LocalizedError {
    let errorDescription: String?
    init(_ message: String) { errorDescription = message }
}

/// Asks at the terminal whether a call may run: y(es), n(o) or a(lways).
@Sendable func askAtTerminal(_ approval: ChappieApprovalRequest) async -> ChappieApprovalDecision {
    say("\n? \(approval.request.name) wants to run with \(approval.request.arguments)")
    say("  (\(approval.toolDescription))")
    say("  Allow it? [y]es, [n]o, [a]lways: ", terminator: "")
    // readLine blocks: read on a thread of its own, not on the concurrency pool.
    let answer = await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: readLine()?.lowercased() ?? "") }.start()
    }
    switch answer.first {
    case "y": return .approved()
    case "a": return .approved(remember: true)
    default: return .denied("the user said no")
    }
}

/// Signs the configured slot in with the device code unless it is signed in already.
@MainActor
func signInIfNeeded(_ configuration: ChappieConfiguration) async throws {
    // Opened asynchronously: the stored session is read before the state is looked at.
    let session = await Chappie.openAuthSession(configuration: configuration)
    if case .signedIn = session.state {
        say("Signed in as \(session.accountInfo?.email ?? "an account").")
        return
    }
    let progress = Task { @MainActor in
        for await state in session.states {
            if case .awaitingDeviceCode(let code, let url) = state { say("Open \(url.absoluteString) and enter the code \(code).") }
        }
    }
    defer { progress.cancel() }
    try await session.startDeviceCodeSignIn()
    say("Signed in as \(session.accountInfo?.email ?? "an account") (\(session.accountInfo?.plan?.displayName ?? "unknown plan")).")
}

/// Streams the reply to one prompt, printing text and every tool step.
func ask(_ client: ChappieClient, _ prompt: String) async throws {
    say("\n> \(prompt)")
    for try await event in client.stream(prompt) {
        switch event {
        case .textDelta(let text):
            say(text, terminator: "")
        case .toolCallRequested(let request) where request.policy != .ask:
            say("[tool] \(request.name) \(request.arguments) (\(request.policy.rawValue))")
        case .toolCallRequested, .approvalRequested:
            // askAtTerminal shows an .ask call with its question (the handler runs while these
            // events wait in the stream, so printing them here would come after the question).
            break
        case .toolCallCompleted(let result):
            say(
                "[tool] \(result.request.name) \(result.status.rawValue) after \(result.duration.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow))): \(result.output.prefix(200))"
            )
        case .completed:
            say("")
        case .usageLimits, .raw:
            break
        }
    }
}

/// The value after `name`, taken out of `arguments`.
func option(_ name: String, from arguments: inout [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    defer { arguments.removeSubrange(index...index + 1) }
    return arguments[index + 1]
}
var arguments = Array(CommandLine.arguments.dropFirst())
let issuer = option("--issuer", from: &arguments)
let backend = option("--backend", from: &arguments)
let home = option("--home", from: &arguments)
let prompts = arguments.isEmpty ? ["What time is it in Paris?"] : arguments

do {
    var configuration = ChappieConfiguration(
        account: try AccountName("example"), store: StoreOptions(home: home),
        endpoints: try ChappieEndpoints(issuer: issuer, backend: backend))
    try await signInIfNeeded(configuration)
    configuration.hostTools = exampleTools()
    configuration.toolApprovalHandler = askAtTerminal
    let client = Chappie.client(configuration: configuration)
    for prompt in prompts { try await ask(client, prompt) }
} catch {
    // Every error has a class (seed 004): say what to do next.
    let recovery = ChappieErrorRecovery.classify(error)
    FileHandle.standardError.write(Data("error: \(error.localizedDescription) (\(recovery))\n".utf8))
    exit(1)
}

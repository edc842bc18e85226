// The Chappie SDK used the way the seed documents' snippets use it: sign-in states observed from
// `Chappie.authSession`, a reply streamed with a handle and stopped from elsewhere, usage windows
// and a custom backoff, usage limits caught with their plan and reset, every other error triaged.
//
//     chappie-example-seed-snippets --issuer URL --backend URL [--home DIR] [--stop-after N] PROMPT
//
// `make example` runs it against the emulator; against the real service leave out --issuer and
// --backend. It prints one line per step, so that a test can follow it.
import Chappie
import Foundation

/// Writes a line at once (`print` buffers when the output is a pipe).
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// Signs the slot in unless the stored session is signed in, printing each state as it comes.
@MainActor
func signIn(_ configuration: ChappieConfiguration) async throws {
    let authSession = Chappie.authSession(configuration: configuration)
    switch authSession.state {
    case .signedIn:
        say("signed in: \(authSession.accountInfo?.plan?.displayName ?? "Unknown plan")")
        return
    case .signedOut:
        say("signed out: signing in")
    case .reauthenticationRequired:
        say("the account must sign in again")
    case .failed(let message):
        say("failed: \(message)")
    default:
        break
    }
    let states = authSession.states
    let watcher = Task {
        for await state in states {
            switch state {
            case .awaitingDeviceCode(let userCode, let verificationURL): say("open \(verificationURL) and enter \(userCode)")
            case .signedIn: say("signed in")
            default: say("state: \(state)")
            }
        }
    }
    defer { watcher.cancel() }
    try await authSession.startDeviceCodeSignIn()
    if let info = authSession.accountInfo {
        say("account: \(info.email ?? "no e-mail"), \(info.plan?.displayName ?? "Unknown plan")")
    }
}

/// Streams the reply with a handle; a task standing in for a stop button cancels it after
/// `stopAfter` deltas (never when nil).
func stream(_ client: ChappieClient, _ prompt: String, stopAfter: Int?) async throws {
    let handle = client.streamHandle(prompt)
    var deltas = 0
    var text = ""
    do {
        for try await event in handle.events {
            switch event {
            case .textDelta(let delta):
                text += delta
                deltas += 1
                if let stopAfter, deltas == stopAfter { Task { handle.cancel() } }
            case .usageLimits(let snapshot):
                if let primary = snapshot.primary {
                    say("usage: primary \(primary.usedPercent) % of \(primary.windowMinutes ?? 0) minutes")
                }
                if let secondary = snapshot.secondary {
                    say("usage: secondary \(secondary.usedPercent) % of \(secondary.windowMinutes ?? 0) minutes")
                }
            case .completed(let response):
                say("reply: \(text)")
                if let usage = response.usage { say("tokens: \(usage.totalTokens)") }
            default:
                break
            }
        }
    } catch is CancellationError {
        say("stopped after \(deltas) deltas: \(text)")
    } catch let error as URLError where error.code == .cancelled {
        say("stopped after \(deltas) deltas: \(text)")
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
let stopAfter = option("--stop-after", from: &arguments).flatMap(Int.init)
let prompt = arguments.first ?? "Tell me about Paris."

do {
    var config = ChappieConfiguration(
        account: try AccountName("seeds"), store: StoreOptions(home: home), endpoints: try ChappieEndpoints(issuer: issuer, backend: backend))
    try await signIn(config)
    config.rateLimitBackoff = ChappieRateLimitBackoffPolicy(
        maxRetries: 3,
        initialDelay: 1,
        maximumDelay: 15
    )
    let client = Chappie.client(configuration: config)
    try await stream(client, prompt, stopAfter: stopAfter)
} catch ChappieClientError.usageLimitReached(let limit) {
    let resets = limit.resetsAt.map { " It resets at \($0.formatted(.iso8601))." } ?? ""
    say("usage limit reached on the \(limit.plan?.displayName ?? "Unknown") plan.\(resets)")
    exit(75)
} catch ChappieClientError.reauthenticationRequired(let message) {
    say("sign in again: \(message)")
    exit(77)
} catch {
    // Everything else, by its class (seed 004).
    switch ChappieErrorRecovery.classify(error) {
    case .retry(.after(let seconds)): say("try again in \(Int(seconds)) s: \(error.localizedDescription)")
    case .retry(.now): say("try again: \(error.localizedDescription)")
    case .signInAgain: say("sign in again: \(error.localizedDescription)")
    case .permanent(let action): say("\(action.rawValue): \(error.localizedDescription)")
    case .cancelled: say("cancelled")
    }
    exit(ChappieErrorRecovery.classify(error).exitCode)
}

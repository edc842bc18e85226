import ChappieSystem
import ChappieText
import ArgumentParser
import Chappie
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie ask`: one prompt, the reply streamed to the terminal.
    struct Ask: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ask",
            abstract: "Send a prompt with an account and stream the reply (the prompt from standard input when not given).",
            discussion: "Exit codes: 0 ok, 75 usage limit or temporary failure, 77 sign in again.")

        @Option(help: "The account (default: the active one).", completion: .accountNames, transform: parseAccountName) var account: AccountName?
        @Option(help: "The model.") var model = "gpt-5-codex"
        @Option(help: "Reasoning effort: minimal, low, medium or high.") var effort: Effort?
        @Option(help: "auto (WebSocket, falling back to HTTP/SSE), websocket (no fall-back) or sse.") var transport: Transport = .auto
        @Argument(help: "The prompt.") var prompt: String?
        @OptionGroup var global: GlobalOptions

        enum Effort: String, ExpressibleByArgument, CaseIterable { case minimal, low, medium, high }

        enum Transport: String, ExpressibleByArgument, CaseIterable {
            case auto, websocket, sse

            var policy: ChappieStreamingTransportPolicy {
                switch self {
                case .auto: .default
                case .websocket: ChappieStreamingTransportPolicy(fallsBackToHTTPSSE: false)
                case .sse: .httpSSEOnly
                }
            }
        }

        func run() async throws {
            let text = try prompt ?? readPrompt()
            guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                throw ValidationError("the prompt is empty: give it as an argument or on standard input")
            }
            let services = try await global.services()
            var chosen = try await global.account(account)
            if chosen == nil { chosen = try await services.accounts.active()?.name }
            guard let name = chosen else {
                throw CommandFailure(
                    message:
                        "no account named and none is active: pass --account NAME, set CHAPPIE_ACCOUNT, or make one active with chappie accounts switch NAME",
                    exitCode: .failure)
            }
            _ = try await services.accounts.account(named: name)
            let client = services.client(for: name, transport: transport.policy)
            let request = ChappieResponseRequest(
                model: model, input: [ChappieInputMessage(text: text)],
                reasoningEffort: effort.flatMap { ChappieResponseRequest.ReasoningEffort(rawValue: $0.rawValue) })
            let usage: ChappieUsageLimitSnapshot?
            let tokens: ChappieTokenUsage?
            let json = global.json
            do {
                let stream = client.streamHandle(request)
                (usage, tokens) = try await cancellingOnSignals {
                    var latest: ChappieUsageLimitSnapshot?
                    var tokens: ChappieTokenUsage?
                    do {
                        for try await event in stream.events {
                            switch event {
                            case .textDelta(let delta):
                                if json { try AskEvent.text(delta).print() } else { StandardStream.output.write(delta) }
                            case .usageLimits(let snapshot) where snapshot.limitID == "codex":
                                latest = snapshot
                                if json { try AskEvent.usage(snapshot).print() }
                            case .completed(let response): tokens = response.usage
                            default: break
                            }
                        }
                    } catch {
                        // Stopped (Ctrl-C, a closed terminal) or failed: a refresh the request has
                        // already sent to the issuer is stored before chappie exits.
                        await stream.finished()
                        throw error
                    }
                    return (latest, tokens)
                }
            } catch {
                // One message for both outputs; with --json it is also the stream's last event.
                let failure: CommandFailure
                if case ChappieClientError.usageLimitReached(let limit) = error {
                    let reset = limit.resetsAt.map { " It resets at \(Formatting.localTime($0)) (\(Formatting.relative($0)))." } ?? ""
                    failure = CommandFailure(
                        message:
                            "\(name) has reached its \(limit.windowName ?? "usage") limit.\(reset) Try another account with --account, or chappie accounts switch --best.",
                        exitCode: ExitStatus.temporaryFailure)
                } else if error is ExitCode {
                    throw error
                } else {
                    failure =
                        (error as? CommandFailure) ?? CommandFailure(error, account: name) ?? CommandFailure(message: "\(error)", exitCode: .failure)
                }
                if json { try AskEvent.error(failure.message, exitCode: failure.exitCode.rawValue).print() }
                throw failure
            }
            if json {
                try AskEvent.done(
                    account: name.rawValue, model: model, transport: transport == .sse || client.transportFallbackReason != nil ? "sse" : "websocket",
                    tokens: tokens
                ).print()
                return
            }
            StandardStream.output.write("\n")
            if transport == .auto, let reason = client.transportFallbackReason {
                StandardStream.error.write("chappie: streamed over HTTP/SSE instead of WebSocket: \(TerminalText.sanitized(reason))\n")
            }
            let windows = [("5-hour", usage?.shortWindow), ("weekly", usage?.longWindow)].compactMap { label, window in
                window.map { "\(label) \(UsageSummary.percent($0.usedPercent)) %" }
            }
            let used = tokens.map { ", \($0.totalTokens) tokens" } ?? ""
            StandardStream.error.write("— \(name), \(model)\(used)\(windows.isEmpty ? "" : ": " + windows.joined(separator: ", "))\n")
        }

        private func readPrompt() throws -> String {
            guard isatty(STDIN_FILENO) == 0 else { throw ValidationError("give the prompt as an argument, or pipe it to standard input") }
            return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
    }
}

/// One line of `ask --json`: the reply streamed as JSON events, one per line (docs/json.md).
struct AskEvent: Encodable {
    /// `text`, `usage`, `done` or `error`.
    var type: String
    var delta: String?
    var fiveHour: WindowJSON?
    var weekly: WindowJSON?
    var limitReached: Bool?
    var account: String?
    var model: String?
    var transport: String?
    /// The tokens the reply used (`done` only, when the server said).
    var tokens: ChappieTokenUsage?
    var message: String?
    var exitCode: Int32?

    static func text(_ delta: String) -> AskEvent { AskEvent(type: "text", delta: delta) }

    static func usage(_ snapshot: ChappieUsageLimitSnapshot) -> AskEvent {
        AskEvent(
            type: "usage", fiveHour: snapshot.shortWindow.map(WindowJSON.init), weekly: snapshot.longWindow.map(WindowJSON.init),
            limitReached: snapshot.limitReached)
    }

    static func done(account: String, model: String, transport: String, tokens: ChappieTokenUsage?) -> AskEvent {
        AskEvent(type: "done", account: account, model: model, transport: transport, tokens: tokens)
    }

    static func error(_ message: String, exitCode: Int32) -> AskEvent {
        AskEvent(type: "error", message: TerminalText.sanitized(message), exitCode: exitCode)
    }

    /// Writes the event as one compact line.
    func print() throws {
        let encoder = Formatting.jsonEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        StandardStream.output.write(try encoder.encode(self) + Data("\n".utf8))
    }
}

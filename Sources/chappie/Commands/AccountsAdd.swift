import ArgumentParser
import ChappieCore
import ChappieService
import ChappieStore
import Foundation

extension ChappieCommand.Accounts {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign an account in with OpenAI's device code (adding it, or renewing its tokens).",
            discussion: """
                Shows a URL and a code: open the URL, sign in to ChatGPT, and enter the code. The code \
                expires after 15 minutes; Ctrl-C stops waiting. Signing in an account that is already \
                stored (same ChatGPT account and user) renews its tokens instead of adding another.
                """)

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The name to give the account (default: the e-mail's local part).", transform: parseAccountName)
        var name: AccountName?

        func run() async throws {
            let service = TokenService(store: try global.openStore().store, endpoints: try global.endpoints())
            let display = SignInDisplay(live: isatty(STDERR_FILENO) == 1, json: global.json)
            let name = self.name
            let result: (account: Account, created: Bool)
            do {
                // Ctrl-C cancels the sign-in cleanly instead of killing the process mid-write.
                result = try await cancellingOnSignals { try await service.signIn(name: name, progress: { state in await display.show(state) }) }
                await display.finish()
            } catch {
                await display.finish()
                throw error
            }
            if global.json {
                try JSONOutput.print(AccountJSON(AccountsService.Summary(account: result.account, credentialProblem: nil)))
            } else {
                let who = TerminalText.sanitized([result.account.info.email, result.account.info.plan?.displayName].compactMap { $0 }.joined(separator: ", "))
                print("\(result.created ? "Signed in" : "Renewed") \(result.account.name) (\(who)).")
            }
        }
    }
}

/// Shows the code and a waiting line: live on a terminal, a plain line each minute otherwise.
actor SignInDisplay {
    private let live: Bool
    private let json: Bool
    private var ticker: Task<Void, Never>?

    init(live: Bool, json: Bool) {
        self.live = live
        self.json = json
    }

    func show(_ state: ChappieDeviceLinkState) {
        switch state {
        case .waitingForApproval(let code, let url, let expiresAt, _):
            guard ticker == nil else { return }
            // The code goes to standard error so that --json output stays one JSON document.
            write("""

                To sign in, open:  \(url.absoluteString)
                and enter the code: \(code)

                The code expires at \(Formatting.localTime(expiresAt)). Never share it: whoever enters it gets your account.

                """)
            let start = Date()
            let live = self.live
            ticker = Task {
                var tick = 0
                while !Task.isCancelled {
                    let elapsed = Int(Date().timeIntervalSince(start)), left = max(0, Int(expiresAt.timeIntervalSinceNow))
                    let line = "Waiting for approval… \(elapsed / 60):\(String(format: "%02d", elapsed % 60)) elapsed, \(left / 60):\(String(format: "%02d", left % 60)) left"
                    if live {
                        FileHandle.standardError.write(Data("\r\u{1B}[2K\(line)".utf8))
                    } else if tick % 60 == 0 {
                        FileHandle.standardError.write(Data("\(line)\n".utf8))
                    }
                    tick += 1
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        case .exchangingCode:
            stopTicker()
            write("Approved. Fetching the tokens…\n")
        default:
            break
        }
    }

    func finish() {
        stopTicker()
    }

    private func stopTicker() {
        if let ticker {
            ticker.cancel()
            if live { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
        }
        ticker = nil
    }

    private nonisolated func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}

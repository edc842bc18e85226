import ChappieText
import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand.Accounts {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Sign an account in with OpenAI's device code, or --browser (adding it, or renewing its tokens).",
            discussion: """
                Shows a URL and a code: open the URL, sign in to ChatGPT, and enter the code. The code \
                expires after 15 minutes; Ctrl-C stops waiting. Signing in an account that is already \
                stored (same ChatGPT account and user) renews its tokens instead of adding another.

                --browser is for workspaces where device codes are disabled: chappie listens on \
                127.0.0.1:1455 (1457 when taken), prints the sign-in URL and opens it ($BROWSER, or \
                xdg-open on a desktop); the browser comes back to chappie when you have signed in. It \
                waits 15 minutes; Ctrl-C stops waiting. The browser must run on this machine (over SSH, \
                forward the port: ssh -L 1455:127.0.0.1:1455).
                """)

        @Argument(help: "The name to give the account (default: the e-mail's local part).", transform: parseAccountName)
        var name: AccountName?
        @Flag(help: "Sign in through a browser on this machine instead of with a device code.") var browser = false
        @Option(help: .hidden) var callbackPort: Int?
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if callbackPort != nil, !browser { throw ValidationError("--callback-port goes with --browser") }
            if let callbackPort, !(0...65535).contains(callbackPort) { throw ValidationError("--callback-port: a port is 0 to 65535") }
        }

        func run() async throws {
            let service = try await global.services().tokens
            let display = SignInDisplay(live: isatty(STDERR_FILENO) == 1, json: global.json)
            let (name, browser, callbackPort) = (self.name, self.browser, self.callbackPort)
            let result: TokenService.SignInOutcome
            do {
                // Ctrl-C cancels the sign-in cleanly instead of killing the process mid-write.
                result = try await cancellingOnSignals {
                    if browser {
                        return try await service.signInWithBrowser(name: name, callbackPort: callbackPort) { step in await display.show(step) }
                    }
                    return try await service.signIn(name: name, progress: { state in await display.show(state) })
                }
                await display.finish()
            } catch {
                await display.finish()
                throw error
            }
            if global.json {
                try JSONOutput.print(AccountJSON(result.account))
            } else {
                let who = TerminalText.sanitized(
                    [result.account.info.email, result.account.info.plan?.displayName].compactMap { $0 }.joined(separator: ", "))
                print("\(result.created ? "Signed in" : "Renewed") \(result.account.name) (\(who)).")
                if result.created, result.account.isActive {
                    print("\(result.account.name) is now the active account, as none was; change it with chappie accounts switch NAME.")
                }
                Formatting.reportRenewal(result.codexHome, of: result.account)
            }
        }
    }
}

import ArgumentParser
import ChappieCore
import ChappieService
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
            let service = try await global.services().tokens
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

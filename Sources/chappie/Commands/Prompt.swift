import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie prompt`: one short line for shell prompts, from the daemon or stored readings.
    struct Prompt: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One short line for a shell prompt or status line: work 5h 42% ↻21:30.",
            discussion: """
                The account is chosen as every command chooses it (the name in $CHAPPIE_ACCOUNT, this \
                directory's .chappie-account, else the active one). The line comes from the daemon or \
                the stored readings, never the network. It prints nothing and exits 0 when no account \
                is set up, when the chosen account does not exist, or when anything fails, so that a \
                prompt never breaks. Placeholders: {account}, {window}, {used}, {left}, {reset}, {plan}.
                """)

        @Option(help: ArgumentHelp("The line's format (default: \"\(PromptLine.defaultFormat)\").", valueName: "format"))
        var format = PromptLine.defaultFormat
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if let problem = PromptLine.problem(with: format) { throw ValidationError(problem) }
        }

        func run() async throws {
            guard let line = await line() else { return }
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }

        /// The line, or `nil` when there is nothing to show (or anything failed).
        private func line() async -> String? {
            let choice: AccountChoice?
            do {
                choice = try global.accountChoice(nil, warnings: false)
            } catch {
                return nil
            }
            let options: ServiceOptions
            do {
                options = try global.serviceOptions()
            } catch {
                return nil
            }
            let view: (accounts: [Account], latest: [Int64: UsageSample])
            if let cached = await DaemonOrStore(options: options).cachedUsage() {
                view = cached
            } else {
                guard let services = try? await ChappieServices.open(options), let accounts = try? await services.accounts.all(),
                    let latest = try? await services.usage.latest()
                else { return nil }
                view = (accounts, latest)
            }
            let account = choice.map { choice in view.accounts.first { $0.name == choice.name } } ?? view.accounts.first { $0.isActive }
            guard let account else { return nil }
            return PromptLine.render(format, account: account, reading: view.latest[account.id]?.snapshot)
        }
    }
}

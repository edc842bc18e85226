import ChappieSystem
import ArgumentParser
import ChappieCore
import ChappieService
import Foundation
import Synchronization

extension ChappieCommand {
    /// `chappie prompt`: one short line for shell prompts, from the daemon or stored readings.
    struct Prompt: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prompt", abstract: "One short line for a shell prompt or status line: work 5h 42% ↻21:30.",
            discussion: """
                The account is chosen as every command chooses it (the name in $CHAPPIE_ACCOUNT, this \
                directory's .chappie-account, else the active one). The line comes from the daemon or \
                the stored readings, never the network. It prints nothing and exits 0 when no account \
                is set up, when the chosen account does not exist, or when anything fails, so that a \
                prompt never breaks. Placeholders: {account}, {window}, {used}, {left}, {reset}, {plan}.
                """)

        @Option(help: ArgumentHelp("The line's format.", valueName: "format"))
        var format = PromptLine.defaultFormat
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if let problem = PromptLine.problem(with: format) { throw ValidationError(problem) }
        }

        func run() async throws {
            // A prompt must never hang: a daemon that does not answer, a store another process holds
            // locked. After the budget the line is given up (the work left behind ends with the process).
            let work = Task { await self.line() }
            let first = Mutex<CheckedContinuation<String?, Never>?>(nil)
            let answer: @Sendable (String?) -> Void = { line in first.withLock { $0.take() }?.resume(returning: line) }
            let shown = await withCheckedContinuation { continuation in
                first.withLock { $0 = continuation }
                Task { answer(await work.value) }
                Task {
                    try? await Task.sleep(for: Self.budget)
                    answer(nil)
                }
            }
            // A closed or full output is no reason to fail a prompt.
            guard let shown else { return }
            StandardStream.output.write(shown + "\n")
        }

        /// How long a prompt line may take before it is given up.
        static let budget = Duration.seconds(2)
        /// How long the daemon may take to answer.
        static let daemonBudget = Duration.milliseconds(500)

        /// The line, or `nil` when there is nothing to show (or anything failed).
        private func line() async -> String? {
            let choice: AccountChoice?
            do {
                choice = try global.accountChoice(nil, printingWarnings: false)
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
            let cached: (accounts: [Account], latest: [Int64: UsageSample])?
            do {
                cached = try await DaemonOrStore(options: options).cachedUsage(timeout: Self.daemonBudget)
            } catch {
                // Another user's socket: nothing is shown, and the store is not read instead.
                return nil
            }
            if let cached {
                view = cached
            } else {
                // No daemon: the store on this machine, read without its key and without writing
                // (a team pool is the network; a missing store is not created).
                guard options.namesLocalStore, let unsealed = AccountsService.unsealedView(home: options.home) else { return nil }
                view = unsealed
            }
            let account = choice.map { choice in view.accounts.first { $0.name == choice.name } } ?? view.accounts.first { $0.isActive }
            guard let account else { return nil }
            let line = PromptLine.render(format, account: account, reading: view.latest[account.id]?.snapshot)
            // A directory's account that the shell hook did not give Codex: a plain codex here runs as
            // the active account, and the line says so.
            if case .binding? = choice?.source, ProcessInfo.processInfo.environment["CHAPPIE_HOOK_ACCOUNT"] != account.name.rawValue,
                let active = view.accounts.first(where: { $0.isActive }), active.id != account.id
            {
                return line + " (codex: \(active.name))"
            }
            return line
        }
    }
}

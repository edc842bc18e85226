import ArgumentParser
import ChappieCore
import ChappieService
import ChappieSystem
import ChappieText
import Foundation

extension ChappieCommand {
    /// `chappie hook bash|zsh|fish`: the shell hook that makes a plain `codex` run as the directory's account.
    struct Hook: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hook", abstract: "Print a shell hook: in a directory bound with chappie bind, codex runs as its account.",
            discussion: """
                Add to your shell's start-up file: eval "$(chappie hook bash)" in ~/.bashrc, \
                eval "$(chappie hook zsh)" in ~/.zshrc, or chappie hook fish | source in \
                ~/.config/fish/config.fish. Then, at each prompt after the directory or its \
                .chappie-account changed, CODEX_HOME names the bound account's Codex home (the one it \
                owns, else a private one, as chappie exec makes it, with fresh tokens), and leaving \
                the directory puts CODEX_HOME back as it was. Without the hook, a plain codex runs as \
                the active account everywhere.
                """)

        @Argument(help: "The shell: bash, zsh or fish.") var shell: ShellHook.Shell
        @Flag(help: .hidden) var apply = false
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            guard apply else {
                StandardStream.output.write(ShellHook.script(for: shell))
                return
            }
            // Run at a prompt: whatever fails, the shell gets commands it can evaluate, and a warning.
            let environment = ProcessInfo.processInfo.environment
            var account: AccountName?
            var home: URL?
            if let directory = AccountBinding.workingDirectory, case .success(let binding)? = AccountBinding.nearest(from: directory).binding {
                do {
                    let plan = try await global.services().exec.prepare(binding.name)
                    close(plan.inUseLock)
                    (account, home) = (binding.name, plan.codexHome)
                } catch {
                    let why = FailureDescription(error, account: binding.name)?.message ?? "\(error)"
                    StandardStream.error.write(
                        "chappie: codex here is not \(binding.name): its Codex home could not be readied (\(TerminalText.sanitized(why)))\n")
                }
            }
            StandardStream.output.write(ShellHook.commands(for: shell, account: account, home: home, environment: environment))
        }
    }
}

import ArgumentParser

extension ChappieCommand {
    /// `chappie completions SHELL`: the completion script, for a shell's start-up file.
    struct Completions: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "completions",
            abstract: "Print the shell completion script for bash, zsh or fish.",
            discussion: """
                Account names are completed wherever a NAME is taken, read from the store without \
                unlocking it. Install it with, for example:
                  chappie completions bash > ~/.local/share/bash-completion/completions/chappie
                  chappie completions zsh > ~/.zfunc/_chappie     # with fpath+=~/.zfunc before compinit
                  chappie completions fish > ~/.config/fish/completions/chappie.fish
                """)

        @Argument(
            help: ArgumentHelp("The shell: bash, zsh or fish.", valueName: "shell"),
            completion: .list(CompletionShell.allCases.map(\.rawValue)))
        var shell: String
        /// Taken as every command takes them; the script itself does not depend on them.
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            guard CompletionShell(rawValue: shell) != nil else { throw ValidationError("no completions for \"\(shell)\": choose bash, zsh or fish") }
        }

        func run() throws {
            guard let shell = CompletionShell(rawValue: shell) else { return }
            print(ChappieCommand.completionScript(for: shell))
        }
    }
}

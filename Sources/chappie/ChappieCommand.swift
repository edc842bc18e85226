import ChappieSystem
import ChappieText
import ArgumentParser
import CProcess
import ChappieCore
import ChappieService
import Foundation

/// `chappie`: several ChatGPT accounts on one machine.
@main
struct ChappieCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chappie",
        abstract: "Manage several ChatGPT accounts: sign-in, fresh tokens, usage, switching.",
        discussion: """
            Every command takes --home DIR (or $CHAPPIE_HOME) for the data directory, --issuer and \
            --backend (or $CHAPPIE_ISSUER and $CHAPPIE_BACKEND) to use another service (such as \
            chappie-emulator), --json for machine-readable output and --verbose for a log on standard \
            error, before or after the subcommand.

            Exit codes: 0 ok, 1 failure, 2 usage, 69 service unavailable, 75 temporary failure, \
            77 sign-in required, 78 configuration or key problem, 130 stopped by Ctrl-C or a signal.

            Shell completions: chappie completions bash|zsh|fish. CHAPPIE_CHECK_ONLY=1 checks a \
            command line (exit 0, or 2 with the reason) without running it.
            """,
        version: ChappieVersion.current,
        subcommands: [
            Accounts.self, Exec.self, Lease.self, Pool.self, Backup.self, Restore.self, Usage.self, Ask.self, Token.self, Refresh.self, Daemon.self,
            Status.self, Key.self, Config.self, Log.self, Doctor.self, Guard.self, Prompt.self, Credits.self, Bind.self, Unbind.self,
            Hook.self, Completions.self,
        ])

    /// Runs the command, mapping argument errors to exit code 2 as docs/errors.md says.
    static func main() async {
        // Closed standard descriptors would be taken by the first files opened (the relay's pipe):
        // what is printed would go into them.
        _ = chappie_process_open_standard_descriptors()
        ProcessTimeZone.settle()
        EnvironmentSecrets.take()
        ProcessReplacement.recordInheritedSignals()
        // SIGINT, SIGTERM and SIGHUP from here on go through the relay (default action until a command
        // sets a handler), so that none is lost when a command starts taking them.
        SignalRelay.install()
        // A closed pipe or socket is an error to handle, never a signal that ends chappie mid-refresh.
        signal(SIGPIPE, SIG_IGN)
        let arguments = GlobalOptionHoisting.reorder(Array(CommandLine.arguments.dropFirst()))
        // --verbose anywhere before a `--` (what follows is another program's).
        let verbose = arguments.prefix { $0 != "--" }.contains("--verbose")
        ProcessLogging.bootstrap(verbose: verbose)
        // With --verbose, what the service said word for word follows the sentence made of it.
        func said(_ failure: CommandFailure) -> String {
            guard verbose, let detail = failure.detail else { return "" }
            return " (\(TerminalText.sanitized(detail)))"
        }
        do {
            var command: any ParsableCommand
            do {
                command = try parseAsRoot(arguments)
            } catch {
                // Only a line the parser refused can hold a mistyped command (`usage snow` is an account).
                if let typo = CommandTypos.problem(in: Array(arguments.prefix { $0 != "--" }), root: Self.self) {
                    StandardStream.error.write("error: \(typo)\n")
                    Foundation.exit(ChappieExitCode.usage)
                }
                throw error
            }
            // A command line checked, not run: how scripts and the docs' tests check one.
            if ProcessInfo.processInfo.environment["CHAPPIE_CHECK_ONLY"] == "1" { Foundation.exit(ChappieExitCode.success) }
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            StandardStream.error.write("error: \(TerminalText.sanitized(failure.message, keepingLineBreaks: true))\(said(failure))\n")
            Foundation.exit(failure.exitCode.rawValue)
        } catch {
            if let failure = CommandFailure(error) {
                StandardStream.error.write("error: \(TerminalText.sanitized(failure.message, keepingLineBreaks: true))\(said(failure))\n")
                Foundation.exit(failure.exitCode.rawValue)
            }
            if exitCode(for: error) == .validationFailure {
                StandardStream.error.write(fullMessage(for: error) + "\n")
                Foundation.exit(2)
            }
            // Help (`--help`, `help COMMAND`): the options every command takes under their own heading.
            if exitCode(for: error) == .success, case let message = fullMessage(for: error), message.contains("USAGE:") {
                print(HelpLayout.grouped(message))
                Foundation.exit(ChappieExitCode.success)
            }
            exit(withError: error)
        }
    }
}

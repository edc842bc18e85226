import ChappieSystem
import ChappieText
import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie exec`: run a command as one account, leaving the active one alone.
    struct Exec: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "exec",
            abstract: "Run a command (such as codex) as one account, without changing the active one.",
            discussion: """
                The command gets CODEX_HOME, a Codex home holding the account's fresh tokens, and \
                CHAPPIE_ACCOUNT, the account's name. An account's tokens live in one Codex home: the one it \
                owns (for the active account, the one switch wrote), else a private one in the data directory \
                (codex-homes/ID, mode 0700, sharing everything of ~/.codex but the login, with a config.toml made \
                from yours that keeps credentials in auth.json). Two commands on one account share its home; the \
                daemon keeps every such home fresh. chappie replaces itself with the command, so signals reach \
                it and its exit status is chappie's (127: not found, 126: not runnable).

                With --failover chappie stays the command's parent instead, passing SIGTERM and SIGHUP on \
                (Ctrl-C reaches the command from the terminal). When the command exits non-zero and its \
                account's usage, read then, is at its limit, chappie runs --resume as the account with the \
                most headroom, in that account's Codex home, {session} standing for the id of the session \
                the command wrote (the rollout it held open; sessions are shared between Codex homes). For \
                codex exec … the default is Codex's resume of that session with the same options. Each start \
                prints "chappie: running as NAME (5-hour N %)" on stderr; each failover is in the audit log.

                Example: chappie exec work -- codex (or chappie exec --account work -- codex)
                Example: chappie exec --failover work -- codex exec "fix the tests"
                """)

        @Argument(
            help: ArgumentHelp("The account, as --account names it.", valueName: "name"), completion: .accountNames, transform: parseAccountName)
        var name: AccountName?
        @Option(
            help: ArgumentHelp("The account (default: $CHAPPIE_ACCOUNT, else the active one).", valueName: "name"), completion: .accountNames,
            transform: parseAccountName)
        var account: AccountName?
        @Flag(help: "Use the usable account with the most headroom, as switch --best does.") var best = false
        @Argument(parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --.", valueName: "command"))
        var command: [String] = []
        @OptionGroup var failoverOptions: FailoverOptions
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if name != nil, account != nil { throw ValidationError("name the account once: chappie exec NAME -- COMMAND, or --account NAME") }
            if name ?? account != nil, best { throw ValidationError("name an account or pass --best, not both") }
            if command.isEmpty { throw ValidationError("name the command to run after --, for example: chappie exec --account work -- codex") }
        }

        func run() async throws {
            let failover = try failoverOptions.options(for: command)
            let services = try await global.services()
            let (account, best, verbose) = (try await global.account(name ?? self.account, best: self.best), self.best, global.verbose)
            // A failure names the account, the active one when none was named.
            let about = { () async -> AccountName? in
                if let account { account } else if best { nil } else { (try? await services.accounts.active())?.name }
            }
            let start = try await CommandFailure.about(about) { () async throws -> Start in
                try await cancellingOnSignals {
                    var name = account
                    if best {
                        let choice = try await services.usage.best()
                        if verbose { StandardStream.error.write("chappie: best: \(TerminalText.sanitized(choice.reason))\n") }
                        name = choice.account.name
                    }
                    let chosen = try await services.tokens.account(name).name
                    // With --failover the home is made ready run by run, under chappie.
                    if let failover { return .parent(chosen, failover) }
                    return .replacing(try await services.exec.prepare(chosen))
                }
            }
            let plan: ExecService.Plan
            switch start {
            case .replacing(let prepared):
                plan = prepared
            case .parent(let chosen, let failover):
                try await CommandFailure.about({ chosen }) {
                    try await runAsParent { control, report in
                        try await services.failover.exec(command, as: chosen, options: failover, control: control, report: report)
                    }
                }
                return
            }
            if let problem = plan.sharingProblem { StandardStream.error.write("warning: \(TerminalText.sanitized(problem))\n") }
            if verbose {
                StandardStream.error.write("chappie: running as \(plan.account.name) with CODEX_HOME=\(plan.codexHome.path)\n")
            }
            let failure = ProcessReplacement.replace(with: command, adding: plan.environment, keeping: [plan.inUseLock])
            throw CommandFailure(message: failure.reason, exitCode: ExitCode(failure.status))
        }

        /// How the command starts: replacing chappie, or under it (`--failover`).
        enum Start {
            case replacing(ExecService.Plan)
            case parent(AccountName, JobFailover.Options)
        }
    }
}

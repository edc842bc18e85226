import ChappieSystem
import ChappieText
import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie accounts …`: the stored accounts.
    struct Accounts: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "accounts",
            abstract: "List, inspect, import, rename, remove and switch accounts.",
            subcommands: [List.self, Add.self, Show.self, Current.self, Import.self, Switch.self, Set.self, Rename.self, Remove.self],
            defaultSubcommand: List.self)
    }
}

extension ChappieCommand.Accounts {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the accounts (the active one is marked *).", aliases: ["ls"])

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            // No store yet: no account, and nothing is created to say so.
            let services = try await global.existingServices()
            let summaries = try await services?.accounts.list() ?? []
            let usage = try await services?.usage.latest() ?? [:]
            if global.json {
                try JSONOutput.print(summaries.map { AccountJSON($0, usage: usage[$0.account.id]) })
                return
            }
            guard !summaries.isEmpty else {
                print("No accounts yet. Import one from the Codex CLI with: chappie accounts import")
                return
            }
            var table = TextTable(
                " ", "NAME", TextTable.Column("EMAIL", drop: 5), TextTable.Column("PLAN", drop: 3), "STATUS", "5H", "WEEKLY",
                TextTable.Column("HEADROOM", drop: 4), TextTable.Column("NEXT RESET", drop: 2), TextTable.Column("TOKEN EXPIRES", drop: 1),
                TextTable.Column("CODEX HOME", clips: true))
            for summary in summaries {
                let account = summary.account
                let status = summary.credentialProblem == nil ? account.status.rawValue : "unreadable"
                let expiry = account.accessTokenExpiresAt.map { Formatting.relative($0) } ?? "-"
                let reading = usage[account.id].map { UsageJSON($0, reserve: account.reservePercent) }
                func percent(_ window: WindowJSON?) -> TextTable.Cell {
                    window.map { TextTable.Cell("\(UsageReport.Cell.number($0.usedPercent).text) %", full: $0.usedPercent >= 100) } ?? "-"
                }
                let headroom =
                    reading.map {
                        TextTable.Cell("\(UsageReport.Cell.number($0.headroom).text) % (\($0.bindingWindow ?? "-"))", full: $0.headroom <= 0)
                    } ?? "-"
                table.append([
                    account.isActive ? "*" : " ", TextTable.Cell(account.name.rawValue), TextTable.Cell(account.info.email ?? "-"),
                    TextTable.Cell(account.info.plan?.displayName ?? "-"), TextTable.Cell(status), percent(reading?.fiveHour),
                    percent(reading?.weekly), headroom,
                    TextTable.Cell(reading?.nextResetAt.map(Formatting.localTime) ?? "-"), TextTable.Cell(expiry),
                    Formatting.codexHome(account.codexHome),
                ])
            }
            print(table.render())
            for summary in summaries where summary.credentialProblem != nil {
                StandardStream.error.write("warning: \(summary.credentialProblem!)\n")
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one account and whether its sealed credentials open.")

        @Argument(help: "The account.", completion: .accountNames, transform: parseAccountName) var name: AccountName
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            guard let services = try await global.existingServices() else {
                throw CommandFailure(message: "there is no account named \(name): no account is stored yet", exitCode: .failure)
            }
            let summary = try await services.accounts.show(name)
            if global.json {
                try JSONOutput.print(AccountJSON(summary))
            } else {
                let account = summary.account
                var table = TextTable("FIELD", "VALUE")
                table.append("name", account.name.rawValue + (account.isActive ? " (active)" : ""))
                table.append("email", account.info.email ?? "-")
                table.append("plan", account.info.plan?.displayName ?? "-")
                table.append("chatgpt account id", account.info.accountID ?? "-")
                table.append("chatgpt user id", account.info.userID ?? "-")
                table.append("fedramp", account.info.isFedRAMPAccount ? "yes" : "no")
                table.append("status", account.status.rawValue)
                table.append("credentials", summary.credentialProblem == nil ? "sealed, open with the current key" : "UNREADABLE")
                table.append("token expires", account.accessTokenExpiresAt.map { "\(Formatting.localTime($0)) (\(Formatting.relative($0)))" } ?? "-")
                table.append("last refresh", account.lastRefreshAt.map(Formatting.localTime) ?? "-")
                table.append("codex home", account.codexHome ?? "-")
                if let error = account.lastError { table.append("last error", error) }
                print(table.render())
            }
            if let problem = summary.credentialProblem { throw CommandFailure(message: problem, exitCode: .failure) }
        }
    }

    struct Current: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "current", abstract: "Print the account commands here use when none is named, and why (on standard error).",
            discussion: """
                The name alone on standard output: $CHAPPIE_ACCOUNT's, else this directory's \
                .chappie-account (chappie bind), else the active account. Standard error says which.
                """)

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let services = try await global.services()
            let account: Account
            let why: String
            if let choice = try global.accountChoice(nil) {
                account = try await CommandFailure.about({ choice.name }) { () async throws -> Account in
                    guard let found = try await services.accounts.existing(named: choice.name) else {
                        throw CommandFailure(message: choice.missingMessage, exitCode: .failure)
                    }
                    return found
                }
                switch choice.source {
                case .binding(let file): why = "from \(file.path)"
                case .environment, .named: why = "from $CHAPPIE_ACCOUNT"
                }
            } else {
                guard let active = try await services.accounts.active() else {
                    let message =
                        try await services.accounts.all().isEmpty
                        ? "no account yet; sign one in with: chappie accounts add NAME"
                        : "no account is active; choose one with: chappie accounts switch NAME"
                    throw CommandFailure(message: message, exitCode: .failure)
                }
                account = active
                why = "the active account"
            }
            if global.json {
                try JSONOutput.print(AccountJSON(account))
            } else {
                print(account.name.rawValue)
                StandardStream.error.write("\(account.name), \(TerminalText.sanitized(why))\n")
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import a Codex CLI auth.json (default: $CODEX_HOME/auth.json, else ~/.codex/auth.json).",
            discussion: "Importing the same ChatGPT account again updates its tokens instead of adding another account.")

        @Argument(help: "The auth.json to read.") var path: String?
        @Option(help: "The name to give the account (default: the e-mail's local part).", transform: parseAccountName)
        var name: AccountName?
        @Flag(help: "Store the file's tokens even when they are older than the stored ones.") var force = false
        @Flag(help: "With --name, rename the account when chappie already has this login under another name.") var rename = false
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let file = path.map { expandedPath($0) }
            let result = try await global.services().accounts.importCodexAuth(from: file, name: name, force: force, renaming: rename)
            if global.json {
                try JSONOutput.print(AccountJSON(result.account))
            } else {
                let who = TerminalText.sanitized(
                    [result.account.info.email, result.account.info.plan?.displayName].compactMap { $0 }.joined(separator: ", "))
                guard !result.unchanged else {
                    print("\(result.account.name) (\(who)) is already up to date: \(result.file.path) holds the tokens chappie has")
                    return
                }
                print("\(result.created ? "Imported" : "Updated") \(result.account.name) (\(who)) from \(result.file.path)")
                Formatting.reportRenewal(result.codexHome, of: result.account)
                if result.created, result.account.isActive {
                    print("\(result.account.name) is now the active account, as none was; change it with chappie accounts switch NAME.")
                }
            }
        }
    }

    struct Switch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "switch",
            abstract: "Make an account the active one, and the one the Codex CLI uses (with no name, on a terminal: pick one).",
            discussion: """
                The account's tokens are written to DIR/auth.json as Codex expects, keeping fields chappie \
                does not manage, so that `codex` runs as the account. DIR is --codex-home, else the \
                codex-home setting (chappie config set codex-home DIR), else $CODEX_HOME, else ~/.codex if it \
                exists; a home found that way becomes the setting. A login there that chappie does not know \
                (from `codex login`) is imported first as an account of its own. --no-codex-home writes none. \
                With neither a name nor --best, on a terminal, it lists the accounts and asks which. \
                `accounts use` is the same command.
                """,
            aliases: ["use"])

        @Argument(help: "The account.", completion: .accountNames, transform: parseAccountName) var name: AccountName?
        @Flag(help: "Switch to the usable account with the most headroom (readings older than 15 minutes are polled first).")
        var best = false
        @Option(help: ArgumentHelp("The Codex home to write auth.json into.", valueName: "dir")) var codexHome: String?
        @Flag(help: "Write no Codex home: only make the account the active one.") var noCodexHome = false
        @Flag(help: "Replace a Codex login chappie cannot import (by default switch refuses to overwrite it).") var force = false
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if name != nil, best { throw ValidationError("name an account, or pass --best (not both)") }
            // With neither, a person at a terminal picks one; a script must say which.
            if name == nil, !best, !(isatty(STDIN_FILENO) == 1 && isatty(STDERR_FILENO) == 1) {
                throw ValidationError("name an account, or pass --best (not both)")
            }
            if noCodexHome, codexHome != nil { throw ValidationError("pass --codex-home DIR or --no-codex-home, not both") }
        }

        func run() async throws {
            let services = try await global.services()
            let service = services.accounts
            var target = name
            if best {
                let usage = services.usage
                let choice = try await cancellingOnSignals { try await usage.best() }
                if !global.json { print("Best: \(choice.reason)") }
                target = choice.account.name
            }
            if target == nil { target = try await ChappieCommand.Accounts.pick(from: services) }
            guard let target else { return }
            let home: AccountsService.CodexHomeChoice = noCodexHome ? .noHome : codexHome.map { .at(expandedPath($0)) } ?? .standard
            let outcome = try await service.switchTo(target, codexHome: home, force: force)
            if let skipped = outcome.codexHomeSkipped {
                StandardStream.error.write("note: \(TerminalText.sanitized(skipped))\n")
            }
            if !outcome.codexProcesses.isEmpty, let file = outcome.codexAuthFile {
                StandardStream.error.write(Formatting.runningCodexWarning(outcome, home: file.deletingLastPathComponent()) + "\n")
            }
            if let imported = outcome.imported {
                let who = imported.info.email.map { " (\(TerminalText.sanitized($0)))" } ?? ""
                StandardStream.error.write(
                    "Imported the login \(outcome.codexAuthFile?.path ?? "the Codex home") held as \(imported.name)\(who), so that switching does not lose it\n"
                )
            }
            // Switched all the same: the user may know the window is about to reset.
            if let full = try? await services.usage.fullness(of: outcome.account) {
                let reset = full.resetsAt.map { "; it resets at \(Formatting.localTime($0)) (\(Formatting.relative($0)))" } ?? ""
                StandardStream.error.write(
                    "warning: \(outcome.account.name) is at its limit (\(full.description))\(reset); chappie accounts switch --best picks the account with the most room\n"
                )
            }
            if global.json {
                struct Switched: Encodable {
                    var account: AccountJSON
                    var codexAuthFile: String?
                    /// `$CODEX_HOME` or `~/.codex` when the home was found there (and stored as the setting).
                    var codexHomeFoundIn: String?
                    var imported: AccountJSON?
                }
                try JSONOutput.print(
                    Switched(
                        account: AccountJSON(outcome.account), codexAuthFile: outcome.codexAuthFile?.path, codexHomeFoundIn: outcome.chosenCodexHome,
                        imported: outcome.imported.map { AccountJSON($0) }))
            } else {
                print("Active account: \(outcome.account.name)" + (outcome.account.info.email.map { " (\(TerminalText.sanitized($0)))" } ?? ""))
                if let file = outcome.codexAuthFile {
                    print("Codex will use it: wrote \(file.path)")
                    if let source = outcome.chosenCodexHome {
                        print(
                            "That is \(source); it is now the codex-home setting (change it with chappie config set codex-home DIR, or pass --no-codex-home)"
                        )
                    }
                }
            }
        }
    }

    /// The account a person picks at the terminal: the accounts numbered, with their use, and a
    /// question on standard error; the answer is a number or a name.
    fileprivate static func pick(from services: ChappieServices) async throws -> AccountName? {
        let accounts = try await services.accounts.all()
        guard !accounts.isEmpty else {
            throw CommandFailure(message: "no account yet; sign one in with: chappie accounts add NAME", exitCode: .failure)
        }
        let usage = try await services.usage.latest()
        var table = TextTable(" ", "#", "NAME", TextTable.Column("EMAIL", drop: 2), "HEADROOM", TextTable.Column("STATUS", drop: 1))
        for (index, account) in accounts.enumerated() {
            let headroom = usage[account.id].map { UsageJSON($0, reserve: account.reservePercent) }.map {
                "\(UsageReport.Cell.number($0.headroom).text) % (\($0.bindingWindow ?? "-"))"
            }
            table.append([
                account.isActive ? "*" : " ", TextTable.Cell(String(index + 1)), TextTable.Cell(account.name.rawValue),
                TextTable.Cell(account.info.email ?? "-"), TextTable.Cell(headroom ?? "-"), TextTable.Cell(account.status.rawValue),
            ])
        }
        StandardStream.error.write(table.render() + "\n")
        while true {
            StandardStream.error.write("Switch to (1-\(accounts.count) or a name; empty to cancel): ")
            guard let answer = readLine()?.trimmingCharacters(in: .whitespaces), !answer.isEmpty else {
                throw CommandFailure(message: "nothing switched", exitCode: .failure)
            }
            if let number = Int(answer), accounts.indices.contains(number - 1) { return accounts[number - 1].name }
            if let account = accounts.first(where: { $0.name.rawValue == answer }) { return account.name }
            StandardStream.error.write("\(TerminalText.sanitized(answer)) is not one of them.\n")
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract:
                "Change an account's settings: --reserve PERCENT (or none) makes --best treat it as full from that use on; --max-leases K lets K leases hold it at once; --auto off keeps it out of automatic choices; --priority N orders them."
        )

        @Argument(help: "The account.", completion: .accountNames, transform: parseAccountName) var name: AccountName
        @Option(help: ArgumentHelp("Used percent at which the account counts as full (1-100, or none).", valueName: "percent"))
        var reserve: String?
        @Option(help: ArgumentHelp("How many leases may hold the account at once (1-1000; default 1).", valueName: "count"))
        var maxLeases: Int?
        @Option(help: ArgumentHelp("Whether auto-switch, --best, failover and leases may choose it by themselves (default on).", valueName: "on|off"))
        var auto: String?
        @Option(
            parsing: .unconditional,
            help: ArgumentHelp("Its order among those they may choose: higher first (-1000 to 1000; default 0).", valueName: "n"))
        var priority: Int?
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if reserve == nil, maxLeases == nil, auto == nil, priority == nil {
                throw ValidationError("give --reserve PERCENT, --max-leases COUNT, --auto on|off or --priority N")
            }
            if let auto, !["on", "off"].contains(auto) { throw ValidationError("--auto is on or off") }
            if let priority, !Account.priorities.contains(priority) { throw ValidationError("--priority is a whole number from -1000 to 1000") }
        }

        func run() async throws {
            let services = try await global.services()
            var account: Account?
            var changes: [String] = []
            if let reserve {
                let percent: Double?
                do {
                    percent = try AccountsService.reserve(parsing: reserve)
                } catch {
                    throw ValidationError("--reserve: \(error.message)")
                }
                account = try await services.accounts.setReserve(percent, for: name)
                changes.append("reserve \(percent.map { "\(UsageReport.Cell.number($0).text) %" } ?? "none (100 %)")")
            }
            if let maxLeases {
                account = try await services.accounts.setMaxLeases(maxLeases, for: name)
                changes.append("max-leases \(maxLeases)")
            }
            if auto != nil || priority != nil {
                account = try await services.accounts.setChoice(autoSwitch: auto.map { $0 == "on" }, priority: priority, for: name)
                if let auto {
                    changes.append(
                        auto == "on"
                            ? "auto on (auto-switch, --best, failover and leases may choose it)"
                            : "auto off (auto-switch, --best, failover and leases leave it out; it is still used by name)")
                }
                if let priority { changes.append("priority \(priority)") }
            }
            if global.json, let account {
                try JSONOutput.print(AccountJSON(account))
            } else {
                print("\(name): " + changes.joined(separator: ", "))
            }
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rename", abstract: "Rename an account.")

        @Argument(help: "The current name.", completion: .accountNames, transform: parseAccountName) var old: AccountName
        @Argument(help: "The new name.", transform: parseAccountName) var new: AccountName
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let accounts = try await global.services().accounts
            try await accounts.rename(old, to: new)
            if !global.json { print("Renamed \(old) to \(new)") } else { try JSONOutput.print(AccountJSON(try await accounts.account(named: new))) }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Remove an account, its sealed credentials and its usage history.",
            discussion: "Asks first on a terminal; elsewhere --yes is required. The audit log keeps the removal.")

        @Argument(help: "The account.", completion: .accountNames, transform: parseAccountName) var name: AccountName
        @Flag(name: [.short, .long], help: "Do not ask for confirmation.") var yes = false
        @Flag(help: "Revoke its refresh token at the issuer first; if that fails, nothing is removed.") var revoke = false
        @Flag(help: "With --revoke: remove the account even when the revocation fails.") var force = false
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if force && !revoke { throw ValidationError("--force only applies with --revoke.") }
        }

        func run() async throws {
            let services = try await global.services()
            let accounts = services.accounts
            let account = try await accounts.account(named: name)
            if !yes {
                guard isatty(STDIN_FILENO) == 1 else {
                    throw CommandFailure(message: "not removing \(name) without confirmation: pass --yes", exitCode: .failure)
                }
                var role = ""
                if account.isActive { role += " It is the active account." }
                if let home = account.codexHome {
                    role +=
                        " It is Codex's login in \(Formatting.codexHome(home).text)/auth.json, which is removed with it: Codex there has no login until you switch."
                }
                StandardStream.error.write(
                    "Remove \(name)\(account.info.email.map { " (\(TerminalText.sanitized($0)))" } ?? "")?\(role) Its tokens and usage history are deleted. [y/N] "
                )
                guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
                    throw CommandFailure(message: "nothing removed", exitCode: .failure)
                }
            }
            let removal = try await services.removeAccount(name, revoking: revoke, force: force)
            if let failure = removal.revocationFailure {
                StandardStream.error.write("warning: could not revoke \(name)'s refresh token: \(failure) Removed it anyway (--force).\n")
            }
            let revoked = removal.revoked
            if global.json {
                struct Removal: Encodable {
                    let account: String
                    let removed: Bool
                    let revoked: Bool
                    /// The `auth.json` removed from the Codex home the account owned.
                    let codexAuthFileRemoved: String?
                }
                try JSONOutput.print(Removal(account: name.rawValue, removed: true, revoked: revoked, codexAuthFileRemoved: removal.codexLogin?.path))
            } else {
                print(revoked ? "Revoked \(name)'s refresh token at the issuer and removed \(name)" : "Removed \(name)")
                if let file = removal.codexLogin {
                    print("Removed its Codex login, \(file.path): give Codex another account with chappie accounts switch --best")
                } else if account.isActive {
                    print("No account is active now: choose one with chappie accounts switch --best")
                }
            }
        }
    }
}

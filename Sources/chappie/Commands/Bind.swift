import ChappieSystem
import ChappieText
import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie bind NAME`: this directory, and those below it, use the account.
    struct Bind: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "bind", abstract: "Use an account in this directory and below it (writes .chappie-account).",
            discussion: """
                Commands that take an optional account (token, ask, exec, lease, usage, refresh, guard, \
                prompt, credits) use, \
                in this order: the name given (or --best), $CHAPPIE_ACCOUNT, the nearest \
                .chappie-account from the working directory up (stopping at a filesystem boundary), \
                then their own default. A .chappie-account that another user can write is ignored, \
                with a warning.
                """)

        @Argument(help: "The account.", completion: .accountNames, transform: parseAccountName) var name: AccountName
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            // The account must exist: a binding to nothing would fail every command here.
            let account = try await CommandFailure.about({ name }) { try await global.services().accounts.account(named: name) }
            guard let directory = AccountBinding.workingDirectory else {
                throw CommandFailure(
                    message: "the working directory cannot be read (removed, or too deep); cd to an existing one", exitCode: .failure)
            }
            let file: URL
            do {
                file = try AccountBinding.write(account.name, in: directory)
            } catch {
                throw CommandFailure(message: error.description, exitCode: .failure)
            }
            // A directory others can write makes the file one chappie passes over: say so now.
            if case .failure(.untrusted(let reason))? = AccountBinding.read(file) {
                StandardStream.error.write("warning: \(TerminalText.sanitized(reason)); commands here will not use it\n")
            }
            if global.json {
                try JSONOutput.print(BindingJSON(account: account.name.rawValue, file: file.path))
            } else {
                print("\(account.name) is this directory's account: \(TerminalText.sanitized(file.path))")
            }
            // Codex reads its own login, not the binding: without the hook, say what it runs as here.
            let active = try? await global.services().accounts.active()
            if ProcessInfo.processInfo.environment["CHAPPIE_HOOK"] == nil, active?.id != account.id {
                StandardStream.error.write(
                    "note: a plain codex here still runs as \(active.map { "the active account, \($0.name)" } ?? "no account chappie manages"); to make it run as \(account.name) in this directory, add the shell hook to your shell's start-up file: eval \"$(chappie hook bash)\" (see chappie hook --help for zsh and fish)\n"
                )
            }
        }
    }

    /// `chappie unbind`: removes this directory's `.chappie-account`.
    struct Unbind: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "unbind", abstract: "Remove this directory's .chappie-account.")

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            guard let directory = AccountBinding.workingDirectory else {
                throw CommandFailure(
                    message: "the working directory cannot be read (removed, or too deep); cd to an existing one", exitCode: .failure)
            }
            let removed: Bool
            do {
                removed = try AccountBinding.remove(in: directory)
            } catch {
                throw CommandFailure(message: error.description, exitCode: .failure)
            }
            let file = directory.appendingPathComponent(AccountBinding.fileName).path
            if global.json {
                try JSONOutput.print(BindingJSON(account: nil, file: file, removed: removed))
            } else {
                print(removed ? "removed \(TerminalText.sanitized(file))" : "this directory has no \(AccountBinding.fileName)")
            }
        }
    }
}

/// `bind --json` and `unbind --json` (docs/json.md).
struct BindingJSON: Encodable {
    var account: String?
    var file: String
    var removed: Bool?
}

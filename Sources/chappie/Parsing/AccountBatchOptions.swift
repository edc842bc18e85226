import ArgumentParser
import ChappieCore
import Foundation

/// The accounts a batch command works on, and how many at once: names, or `--all`, or else
/// `$CHAPPIE_ACCOUNT`. One group, so that `refresh` and `usage poll` choose alike.
struct AccountBatchOptions: ParsableArguments {
    @Argument(help: "The accounts (default: $CHAPPIE_ACCOUNT).", completion: .accountNames, transform: parseAccountName) var names: [AccountName] = []
    @Flag(help: "Every account.") var all = false
    @Option(help: "How many accounts at once (1-64).") var concurrency = 8

    func validate() throws {
        if all, !names.isEmpty { throw ValidationError("name accounts or pass --all, not both") }
        guard (1...64).contains(concurrency) else { throw ValidationError("--concurrency must be between 1 and 64") }
    }

    /// The names given, or `$CHAPPIE_ACCOUNT`'s; empty with `--all`.
    ///
    /// - Parameter verb: What the command does to them, for the message when none is named.
    func chosen(_ global: GlobalOptions, verb: String) async throws -> [AccountName] {
        guard !all, names.isEmpty else { return names }
        guard let named = try await global.account(nil) else {
            throw CommandFailure(message: "name accounts to \(verb), set CHAPPIE_ACCOUNT, or pass --all", exitCode: ExitCode(ChappieExitCode.usage))
        }
        return [named]
    }
}

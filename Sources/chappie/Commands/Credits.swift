import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie credits`: an account's banked rate-limit resets.
    struct Credits: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "credits", abstract: "List an account's banked rate-limit resets, or redeem one.",
            subcommands: [List.self, Redeem.self], defaultSubcommand: List.self)
    }
}

extension ChappieCommand.Credits {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "An account's reset credits, soonest to expire first (the account chosen as every command chooses it).")

        @Argument(
            help: "The account (default: $CHAPPIE_ACCOUNT's, this directory's, else the active one).", completion: .accountNames,
            transform: parseAccountName)
        var name: AccountName?
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let services = try await global.services()
            let account = try await chosenAccount(name, global: global, services: services)
            let credits = try await CommandFailure.about({ account.name }) {
                try await cancellingOnSignals { try await services.credits.list(account) }
            }
            if global.json {
                try JSONOutput.print(CreditsJSON(account: account.name.rawValue, credits: credits))
                return
            }
            let available = credits.filter { $0.isAvailable() }.count
            print("\(account.name): \(available) reset credit\(available == 1 ? "" : "s") available")
            for credit in credits {
                let expiry = credit.expiresAt.map { " until \(Formatting.localTime($0)) (\(Formatting.relative($0)))" } ?? ""
                print("  \(credit.status)\(expiry)\(credit.title.map { ": \($0)" } ?? "")")
            }
            if available > 0 { print("Redeem one with: chappie credits redeem \(account.name)") }
        }
    }

    struct Redeem: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "redeem",
            abstract: "Redeem the reset credit that expires first: both windows start afresh.",
            discussion: "Exit 0 for reset, 1 for nothing_to_reset, no_credit or already_redeemed (the line says which).")

        @Argument(help: "The account.", completion: .accountNames, transform: parseAccountName) var name: AccountName
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let services = try await global.services()
            let account = try await CommandFailure.about({ name }) { try await services.accounts.account(named: name) }
            let outcome = try await CommandFailure.about({ account.name }) {
                try await cancellingOnSignals { try await services.credits.redeem(account) }
            }
            let line =
                switch outcome {
                case .reset: "\(account.name): reset; both windows start afresh"
                case .nothingToReset: "\(account.name): nothing to reset (its windows are empty); the credit was kept"
                case .noCredit: "\(account.name): no reset credit is available"
                case .alreadyRedeemed: "\(account.name): that credit was redeemed already"
                }
            if global.json {
                try JSONOutput.print(RedeemJSON(account: account.name.rawValue, outcome: outcome.rawValue, message: line))
            } else {
                print(line)
            }
            if outcome != .reset { throw ExitCode(ChappieExitCode.failure) }
        }
    }
}

/// The account a command that takes one optional name uses: the name, `$CHAPPIE_ACCOUNT`'s, the
/// directory's, else the active one.
func chosenAccount(_ name: AccountName?, global: GlobalOptions, services: ChappieServices) async throws -> Account {
    if let name = try await global.account(name) {
        return try await CommandFailure.about({ name }) { try await services.accounts.account(named: name) }
    }
    guard let active = try await services.accounts.active() else {
        throw CommandFailure(
            message: "no account named and none is active: name one, or choose one with chappie accounts switch NAME", exitCode: .failure)
    }
    return active
}

/// `credits --json` (docs/json.md).
struct CreditsJSON: Encodable {
    var account: String
    var available: Int
    var credits: [ResetCreditsService.Credit]

    init(account: String, credits: [ResetCreditsService.Credit]) {
        self.account = account
        self.available = credits.filter { $0.isAvailable() }.count
        self.credits = credits
    }
}

/// `credits redeem --json`.
struct RedeemJSON: Encodable {
    var account: String
    var outcome: String
    var message: String
}

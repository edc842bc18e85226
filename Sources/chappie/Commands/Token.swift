import ChappieSystem
import ChappieText
import ChappieDaemonClient
import ArgumentParser
import Chappie
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie token`: a valid bearer token for scripts.
    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Print a valid access token for an account (the active one by default), refreshing it if needed.",
            discussion: """
                Prints the token alone on standard output, for scripts: curl -H "Authorization: Bearer $(chappie token work)". \
                --json adds the expiry and the ChatGPT account id. Exit codes: 0 ok, 75 try later, 77 sign in again.
                """)

        @Argument(help: "The account.", completion: .accountNames, transform: parseAccountName) var name: AccountName?
        @Option(
            help: ArgumentHelp("Refresh when the token expires within this: 30s, 5m, 1h (default: 5m).", valueName: "duration"),
            transform: parseDuration)
        var margin: Duration = .seconds(300)
        @Option(help: ArgumentHelp("The daemon's socket (default: chappie.sock in the data directory).", valueName: "path")) var socket: String?
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let route = DaemonOrStore(options: try global.serviceOptions(), socket: socket.map { expandedPath($0) })
            let (name, margin) = (try await global.account(self.name), self.margin)
            // A failure names the account, the active one when none was named.
            let token = try await CommandFailure.about({ if let name { name } else { try? await global.services().accounts.active()?.name } }) {
                try await cancellingOnSignals { try await route.token(for: name, margin: margin) }
            }
            try print(token)
        }

        private func print(_ token: DaemonReply.Token) throws {
            if let warning = token.warning { StandardStream.error.write("warning: \(TerminalText.sanitized(warning))\n") }
            if global.json {
                struct TokenJSON: Encodable {
                    var account: String
                    var accessToken: String
                    var expiresAt: Date?
                    var chatgptAccountID: String?
                    var fedramp: Bool
                    var warning: String?
                }
                try JSONOutput.print(
                    TokenJSON(
                        account: token.name, accessToken: token.accessToken, expiresAt: token.expiresAt, chatgptAccountID: token.chatgptAccountID,
                        fedramp: token.fedramp, warning: token.warning))
            } else {
                // A token is printable text; whatever else is there (from a socket that is not a
                // daemon's) does not reach the terminal as control characters.
                StandardStream.output.write(TerminalText.sanitized(token.accessToken) + "\n")
            }
        }
    }

    /// `chappie refresh`: refresh tokens now, for cron.
    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "refresh",
            abstract: "Refresh accounts' tokens (cron-friendly).",
            discussion: """
                Refreshes the named accounts (else $CHAPPIE_ACCOUNT's), or every account with --all, 8 at a time. With \
                --if-expiring-within, only tokens that expire within that time are refreshed. Prints one \
                line per account (nothing with --quiet unless something failed). Exit codes: 0 all fine, \
                75 some failed for now (try later), 77 some must be signed in again.
                """)

        @OptionGroup var accounts: AccountBatchOptions
        @Option(help: ArgumentHelp("Only refresh tokens that expire within this (30s, 5m, 1h, 2d).", valueName: "duration"), transform: parseDuration)
        var ifExpiringWithin: Duration?
        @Flag(help: "Print nothing unless something failed.") var quiet = false
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let names = try await accounts.chosen(global, verb: "refresh")
            let service = try await global.services().tokens
            let (within, concurrency) = (ifExpiringWithin, accounts.concurrency)
            let reports = try await cancellingOnSignals(stoppedIfSignalled: true) {
                try await service.refresh(names, onlyIfExpiringWithin: within, concurrency: concurrency)
            }
            var codes: [Int32] = []
            var lines: [(name: AccountName, line: String)] = []
            for report in reports {
                if let error = report.error {
                    let failure = CommandFailure(error, account: report.name) ?? CommandFailure(message: "\(error)", exitCode: .failure)
                    codes.append(failure.exitCode.rawValue)
                    if !global.json {
                        var line = TerminalText.sanitized(failure.message)
                        if failure.exitCode == ExitStatus.temporaryFailure, let expiry = report.expiresAt {
                            line +=
                                expiry > Date()
                                ? " Its current token stays valid until \(Formatting.localTime(expiry)) (\(Formatting.relative(expiry)))."
                                : " Its token has expired: what needs it fails until a refresh works."
                        }
                        if global.verbose, let detail = failure.detail { line += " (\(TerminalText.sanitized(detail)))" }
                        lines.append((report.name, line))
                    }
                } else if !quiet && !global.json {
                    let expiry = report.expiresAt.map { "expires \(Formatting.localTime($0)) (\(Formatting.relative($0)))" } ?? ""
                    print("\(report.name): \(report.outcome?.rawValue.replacingOccurrences(of: "_", with: " ") ?? "ok"), \(expiry)")
                }
            }
            FailureLines.write(lines, of: reports.count)
            if global.json {
                struct Line: Encodable {
                    var account: String
                    var outcome: String?
                    var expiresAt: Date?
                    var error: String?
                    /// The issuer's own words, when `error` puts them in a person's.
                    var detail: String?
                }
                try JSONOutput.print(
                    reports.map { report in
                        let failure = report.error.map {
                            CommandFailure($0, account: report.name) ?? CommandFailure(message: "\($0)", exitCode: .failure)
                        }
                        return Line(
                            account: report.name.rawValue, outcome: report.outcome?.rawValue, expiresAt: report.expiresAt, error: failure?.message,
                            detail: failure?.detail)
                    })
            }
            let exit = ChappieExitCode.mostSerious(codes)
            if exit != ChappieExitCode.success { throw ExitCode(exit) }
        }
    }
}

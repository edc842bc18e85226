import ChappieSystem
import ChappieText
import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie guard`: exit 0 when an account has room for a job, 75 when it has not.
    struct Guard: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "guard",
            abstract: "Exit 0 when an account has enough headroom for a job, 75 (with the reset time) when not.",
            discussion: """
                The account is the one named, else $CHAPPIE_ACCOUNT's, else this directory's \
                .chappie-account, else the active one; with --any, any account will do (the line names \
                it). Headroom is the binding window's room (up to the account's reserve). Readings \
                younger than --max-age are used as they are; older ones are polled first. Exit 77 when \
                the account must be signed in again. For CI: chappie guard --min-headroom 20 && codex exec …
                """)

        @Argument(help: "The account (default: as above).", completion: .accountNames, transform: parseAccountName) var name: AccountName?
        @Option(help: ArgumentHelp("The headroom needed, in percent of the binding window (default: 10).", valueName: "percent"))
        var minHeadroom: Double = 10
        @Flag(help: "Any account with enough headroom will do.") var any = false
        @Option(help: ArgumentHelp("Poll when the newest reading is older than this (default: 2m).", valueName: "duration"), transform: parseDuration)
        var maxAge: Duration = .seconds(120)
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            guard minHeadroom.isFinite, (0...100).contains(minHeadroom) else { throw ValidationError("--min-headroom is a percent from 0 to 100") }
            if any && name != nil { throw ValidationError("name an account, or pass --any, not both") }
        }

        func run() async throws {
            let services = try await global.services()
            let accounts: [Account]
            if any {
                // As --best: a disabled account, or one chappie may not choose by itself, is not one a job may use.
                accounts = try await services.accounts.all().filter { $0.status != .disabled && $0.autoSwitch }
                guard !accounts.isEmpty else {
                    throw CommandFailure(message: "no account is set up; add one with chappie accounts add NAME", exitCode: .failure)
                }
            } else {
                accounts = [try await chosenAccount(name, global: global, services: services)]
            }
            let check = HeadroomGuard(usage: services.usage, minimumPercent: minHeadroom, maxAge: maxAge)
            let verdicts = try await cancellingOnSignals(stoppedIfSignalled: true) { await check.check(accounts) }
            guard let verdict = HeadroomGuard.deciding(verdicts) else {
                throw CommandFailure(message: "no account is set up; add one with chappie accounts add NAME", exitCode: .failure)
            }
            let (line, status) = describe(verdict, checked: verdicts.count)
            if global.json {
                try JSONOutput.print(GuardJSON(verdict, minimum: minHeadroom, message: line))
            } else {
                // The exit code is the answer: a closed standard error must not change it.
                StandardStream.error.write("\(TerminalText.sanitized(line))\n")
            }
            if status != 0 { throw ExitCode(status) }
        }

        private func describe(_ verdict: HeadroomGuard.Verdict, checked: Int) -> (String, Int32) {
            let name = verdict.account.name
            let room = verdict.headroom.map {
                "\(Int($0.percent.rounded(.down))) % headroom" + ($0.bindingWindow.map { " in the \($0.label) window" } ?? "")
            }
            switch verdict.outcome {
            case .enough:
                return ("\(name) has \(room ?? "headroom") (needs \(Self.percent(minHeadroom)) %)", ChappieExitCode.success)
            case .short:
                let reset = verdict.resetsAt.map { "; it resets at \(Formatting.localTime($0)) (\(Formatting.relative($0)))" } ?? ""
                let which = checked > 1 ? "no account has \(Self.percent(minHeadroom)) % headroom; of them, " : ""
                return (
                    "\(which)\(name) has \(room ?? "no headroom"), under \(Self.percent(minHeadroom)) %\(reset)", ChappieExitCode.temporaryFailure
                )
            case .signInRequired:
                return ("\(name) must be signed in again: chappie accounts add \(name)", ChappieExitCode.signInRequired)
            case .unknown(let why):
                return ("\(name): no usage reading: \(why)", ChappieExitCode.temporaryFailure)
            }
        }

        private static func percent(_ value: Double) -> String {
            value == value.rounded() ? "\(Int(value))" : "\(value)"
        }
    }
}

/// `guard --json` (docs/json.md).
struct GuardJSON: Encodable {
    var account: String
    var enough: Bool
    var outcome: String
    var headroomPercent: Double?
    var window: String?
    var resetsAt: Date?
    var observedAt: Date?
    var minimumHeadroom: Double
    var message: String

    init(_ verdict: HeadroomGuard.Verdict, minimum: Double, message: String) {
        account = verdict.account.name.rawValue
        enough = verdict.outcome == .enough
        outcome =
            switch verdict.outcome {
            case .enough: "enough"
            case .short: "short"
            case .signInRequired: "signin_required"
            case .unknown: "unknown"
            }
        headroomPercent = verdict.headroom?.percent
        window = verdict.headroom?.bindingWindow?.rawValue
        resetsAt = verdict.resetsAt
        observedAt = verdict.observedAt
        minimumHeadroom = minimum
        self.message = TerminalText.sanitized(message)
    }
}

import ChappieSystem
import ChappieText
import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie lease`: accounts leased to jobs by headroom and free slots.
    struct Lease: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lease",
            abstract: "Lease an account to a job: the one with the most headroom that has a free slot.",
            discussion: """
                Each account has --max-leases slots (default 1; chappie accounts set NAME --max-leases K). \
                A lease that hands out the account's private Codex home (chappie exec's) takes every slot. \
                A lease lasts --ttl unless renewed; one whose holder died expires and its slot is taken over. \
                On a team pool (team-pool.md in share/doc/chappie) slots are shared by every machine.

                Example: chappie lease --best --ttl 2h -- make test
                """,
            subcommands: [Run.self, Acquire.self, Renew.self, Release.self, List.self], defaultSubcommand: Run.self)

        /// The options `run` and `acquire` share.
        struct Choice: ParsableArguments {
            @Option(
                help: ArgumentHelp(
                    "The account (default: $CHAPPIE_ACCOUNT, else the one with the most headroom that has a free slot).", valueName: "name"),
                completion: .accountNames, transform: parseAccountName)
            var account: AccountName?
            @Flag(help: "Take the account with the most headroom that has a free slot (the default).") var best = false
            @Option(help: ArgumentHelp("How long the lease lasts unless renewed (default 2h).", valueName: "duration"), transform: parseDuration)
            var ttl: Duration = .seconds(2 * 3600)
            @Option(
                help: ArgumentHelp("How long to wait for a free slot before giving up with exit 75 (default 10m).", valueName: "duration"),
                transform: parseDuration)
            var wait: Duration = .seconds(600)
            @Option(
                help: ArgumentHelp(
                    "private: a Codex home of the job's own (the account's, or one made for it as exec makes it); the lease takes every slot.",
                    valueName: "private"))
            var codexHome: String?

            func validate() throws {
                if account != nil, best { throw ValidationError("name an --account or pass --best, not both") }
                if ttl < .seconds(10) { throw ValidationError("--ttl must be at least 10s") }
                if let codexHome, codexHome != "private" { throw ValidationError("--codex-home takes one value, private") }
            }

            func request(holder: String, global: GlobalOptions) async throws -> LeaseRequest {
                LeaseRequest(
                    account: try await global.account(account, best: best), ttl: ttl, wait: wait, holder: holder,
                    privateCodexHome: codexHome == "private")
            }
        }

        struct Run: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "run",
                abstract: "Run a command under a lease, renewed while it runs and given back when it ends.",
                discussion: """
                    The command gets CHAPPIE_ACCOUNT (the account's name), CHAPPIE_LEASE (the lease id) and, \
                    where the account owns a Codex home here (the one switch wrote, or chappie exec's private \
                    one), CODEX_HOME, so a codex in the job runs as the account. Its exit status is chappie's.

                    With --failover the job runs in a Codex home of its own (as --codex-home private); when it \
                    exits non-zero with its account at its limit, the lease is given back and the job's session \
                    is resumed under a lease on the account with the most headroom (see chappie exec --help).
                    """)

            @OptionGroup var choice: Choice
            @OptionGroup var failoverOptions: FailoverOptions
            @Argument(parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --.", valueName: "command"))
            var command: [String] = []
            @OptionGroup var global: GlobalOptions

            func validate() throws {
                if command.isEmpty { throw ValidationError("name the command to run after --, for example: chappie lease --best -- make test") }
                if failoverOptions.failover, choice.codexHome != nil {
                    throw ValidationError("--failover gives the job a Codex home of its own already; leave out --codex-home")
                }
            }

            func run() async throws {
                let failover = try failoverOptions.options(for: command)
                let services = try await global.services()
                // The program's name only: arguments may hold secrets, and the holder goes to the audit log.
                let holder = "pid \(getpid()): " + URL(fileURLWithPath: command[0]).lastPathComponent.prefix(60)
                let request = try await choice.request(holder: holder, global: global)
                let verbose = global.verbose
                // Waiting and failures always; the lease taken only with --verbose.
                try await runAsParent(printing: { verbose || !$0.hasPrefix("lease ") }) { control, report in
                    if let failover {
                        return try await services.failover.leaseRun(command, request: request, options: failover, control: control, report: report)
                    }
                    return try await services.leases.run(command, request: request, control: control, report: report)
                }
            }
        }

        struct Acquire: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "acquire",
                abstract: "Take a lease and print its id, account and expiry (for scripts: renew and release it yourself).")

            @OptionGroup var choice: Choice
            @Option(help: ArgumentHelp("Who holds it, for lease list and the audit log (default: this process).", valueName: "text"))
            var holder: String?
            @OptionGroup var global: GlobalOptions

            func run() async throws {
                let services = try await global.services()
                let request = try await choice.request(holder: holder ?? "pid \(getppid()) (lease acquire)", global: global)
                let granted = try await cancellingOnSignals {
                    try await services.leases.acquire(request) { message in
                        StandardStream.error.write("chappie: \(TerminalText.sanitized(message))\n")
                    }
                }
                try printLease(granted.lease, codexHome: granted.codexHome, json: global.json)
            }
        }

        struct Renew: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "renew", abstract: "Extend a lease to --ttl from now.")

            @Argument(help: "The lease id.", transform: parseLeaseID) var id: UUID
            @Option(help: ArgumentHelp("How long from now (default 2h).", valueName: "duration"), transform: parseDuration)
            var ttl: Duration = .seconds(2 * 3600)
            @OptionGroup var global: GlobalOptions

            func run() async throws {
                let lease = try await global.services().leases.renew(id, ttl: ttl)
                try printLease(lease, codexHome: nil, json: global.json)
            }
        }

        struct Release: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "release", abstract: "Give a lease back.")

            @Argument(help: "The lease id.", transform: parseLeaseID) var id: UUID
            @OptionGroup var global: GlobalOptions

            func run() async throws {
                try await global.services().leases.release(id)
                if global.json { try JSONOutput.print(["released": id.uuidString.lowercased()]) }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "Show the leases that have not expired.")

            @OptionGroup var global: GlobalOptions

            func run() async throws {
                let leases = try await global.services().leases.list()
                if global.json {
                    try JSONOutput.print(leases.map { LeaseJSON($0, codexHome: nil) })
                    return
                }
                var table = TextTable("ID", "ACCOUNT", "MACHINE", "HOLDER", "SLOTS", "EXPIRES")
                for lease in leases {
                    table.append(
                        lease.id.uuidString.lowercased(), lease.accountName.rawValue, TerminalText.sanitized(lease.machine),
                        TerminalText.sanitized(lease.holder), lease.wholeAccount ? "all" : "1", Formatting.relative(lease.expiresAt))
                }
                print(leases.isEmpty ? "No leases." : table.render())
            }
        }
    }
}

/// A lease as `acquire` and `renew` print it: `ID ACCOUNT EXPIRY`, or ``LeaseJSON``.
func printLease(_ lease: ChappieCore.Lease, codexHome: String?, json: Bool) throws {
    if json {
        try JSONOutput.print(LeaseJSON(lease, codexHome: codexHome))
    } else {
        print("\(lease.id.uuidString.lowercased()) \(lease.accountName) \(lease.expiresAt.formatted(.iso8601))")
    }
}

/// A lease id argument (a UUID; a usage error otherwise).
func parseLeaseID(_ text: String) throws -> UUID {
    guard let id = UUID(uuidString: text) else { throw ValidationError("\"\(text)\" is not a lease id (as lease acquire prints it)") }
    return id
}

/// A lease as `--json` prints it.
struct LeaseJSON: Encodable {
    var id: String
    var account: String
    var machine: String
    var holder: String
    var wholeAccount: Bool
    var acquiredAt: Date
    var expiresAt: Date
    var codexHome: String?

    init(_ lease: ChappieCore.Lease, codexHome: String?) {
        id = lease.id.uuidString.lowercased()
        account = lease.accountName.rawValue
        machine = lease.machine
        holder = lease.holder
        wholeAccount = lease.wholeAccount
        acquiredAt = lease.acquiredAt
        expiresAt = lease.expiresAt
        self.codexHome = codexHome
    }
}

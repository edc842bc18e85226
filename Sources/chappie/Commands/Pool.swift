import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie pool`: the team pool (docs/team-pool.md).
    struct Pool: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pool",
            abstract: "Manage the team pool (a PostgreSQL store several machines share; team-pool.md in share/doc/chappie).",
            subcommands: [Migrate.self])

        struct Migrate: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "migrate",
                abstract: "Move the accounts of a single-user store into the pool.",
                discussion: """
                    Each account keeps its identity, settings and usage history, and is removed from the local \
                    store once the pool has it: one account never exists twice. The pool is the one --store, \
                    $CHAPPIE_STORE_URL or the store-url file names.

                    Example: chappie --store postgres://chappie@db/pool pool migrate --from-sqlite ~/.local/share/chappie
                    """)

            @Flag(name: .customLong("from-sqlite"), help: "Move from a local SQLite store (the only source there is).") var fromSQLite = false
            @Argument(help: ArgumentHelp("The local store's data directory (default: --home, else the usual one).", valueName: "home"))
            var home: String?
            @OptionGroup var global: GlobalOptions

            func validate() throws {
                if !fromSQLite { throw ValidationError("say where from: chappie pool migrate --from-sqlite [HOME]") }
            }

            func run() async throws {
                let json = global.json
                let outcome = try await PoolMigration.fromSQLite(home: home, options: try global.serviceOptions()) { message in
                    if !json { print(message) }
                }
                if json {
                    struct Left: Encodable {
                        var account: String
                        var reason: String
                    }
                    struct Migrated: Encodable {
                        var moved: [String]
                        var left: [Left]
                    }
                    try JSONOutput.print(
                        Migrated(moved: outcome.moved.map(\.rawValue), left: outcome.left.map { Left(account: $0.name.rawValue, reason: $0.reason) }))
                } else {
                    print("Moved \(outcome.moved.count) account\(outcome.moved.count == 1 ? "" : "s") to the pool; \(outcome.left.count) left.")
                }
                if !outcome.left.isEmpty { throw ExitCode(1) }
            }
        }
    }
}

import ChappieText
import ArgumentParser
import ChappieService
import ChappieCore
import Foundation

extension ChappieCommand {
    /// `chappie log`: the audit log.
    struct Log: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "log",
            abstract: "Show the audit log: imports, switches, renames, removals, key changes (newest first).",
            discussion: """
                Usage polls are left out unless --all: the daemon polls every account every few minutes, \
                and its entries would drown the rest. --kind shows only the kinds named (repeat it, or \
                separate them with commas), polls included.
                """)

        @Option(help: "How many entries to show.") var limit = 50
        @Flag(help: "Show usage polls too.") var all = false
        @Option(help: "Only entries about this account.", completion: .accountNames, transform: parseAccountName) var account: AccountName?
        @Option(help: ArgumentHelp("Only entries of this kind, such as switched or removed (see the EVENT column).", valueName: "kind"))
        var kind: [String] = []
        @Option(help: "Only entries from this time on (2026-11-01, 2026-11-01T08:00, or an age like 7d).") var since: String?
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            guard (1...100_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 100000") }
            let known = Set(AuditEventKind.allCases.map(\.rawValue))
            for name in kinds where !known.contains(name) {
                throw ValidationError(
                    "--kind: \"\(name)\" is not a kind of entry; the kinds are \(AuditEventKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }

        private var kinds: [String] {
            kind.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }.filter { !$0.isEmpty }
        }

        func run() async throws {
            let filtered = account != nil || since != nil || !kinds.isEmpty
            let events =
                try await global.existingServices()?.auditLog(
                    kinds: kinds.isEmpty ? nil : kinds, polls: all, account: account, since: try since.map { try parseTime($0, timeZone: .current) },
                    limit: limit) ?? []
            if global.json {
                struct Entry: Encodable {
                    var at: Date
                    var kind: String
                    var account: String?
                    var detail: String
                }
                try JSONOutput.print(events.map { Entry(at: $0.at, kind: $0.kind, account: $0.accountName, detail: $0.detail) })
                return
            }
            var table = TextTable("WHEN", "EVENT", "ACCOUNT", "DETAIL")
            for event in events {
                table.append(Formatting.localTime(event.at), event.kind, event.accountName ?? "-", event.detail)
            }
            guard !events.isEmpty else {
                print(filtered ? "No entries match." : all ? "The audit log is empty." : "No entries (usage polls are left out: --all shows them).")
                return
            }
            print(table.render())
        }
    }
}

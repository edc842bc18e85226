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
            abstract: "Show the audit log: imports, switches, renames, removals, key changes (newest first).")

        @Option(help: "How many entries to show.") var limit = 50
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            guard (1...100_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 100000") }
        }

        func run() async throws {
            let events = try await global.services().auditLog(limit: limit)
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
            print(events.isEmpty ? "The audit log is empty." : table.render())
        }
    }
}

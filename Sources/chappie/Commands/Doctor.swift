import ChappieText
import ArgumentParser
import ChappieService

extension ChappieCommand {
    /// `chappie doctor`: are the libraries, the data directory and the services in order?
    struct Doctor: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "doctor",
            abstract: "Check libraries, the data directory and whether the services answer.",
            discussion: "Exits 0 when all is well, 78 when the data directory needs fixing, 69 when a service does not answer.")

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let report = await ChappieService.Doctor(options: try global.serviceOptions())
                .run(logger: global.makeLogger())
            if global.json {
                try JSONOutput.print(report)
            } else {
                print(Self.render(report))
            }
            if report.dataDirectory.problem != nil { throw ExitStatus.configuration }
            if !report.isHealthy { throw ExitStatus.serviceUnavailable }
        }

        static func render(_ report: DoctorReport) -> String {
            var table = TextTable("CHECK", "STATUS", "DETAIL")
            table.append("chappie", "ok", report.version)
            for library in report.libraries {
                table.append(
                    library.name, library.problem == nil ? "ok" : "MISSING",
                    [library.version, library.detail].compactMap { $0 }.joined(separator: ", "))
            }
            let directory = report.dataDirectory
            let state = directory.exists ? "mode \(directory.mode ?? "?")" : "not created yet; made 0700 on first use"
            table.append("data directory", directory.problem == nil ? "ok" : "PROBLEM", "\(directory.path) (\(state))")
            for endpoint in report.endpoints {
                let status = endpoint.reachable && endpoint.problem == nil ? "ok" : endpoint.reachable ? "PROBLEM" : "UNREACHABLE"
                let answer = endpoint.status.map { "HTTP \($0) in \(endpoint.milliseconds) ms" } ?? "no answer after \(endpoint.milliseconds) ms"
                table.append(endpoint.name, status, "\(endpoint.url): \(answer)")
            }
            if let pool = report.pool {
                let status = pool.reachable && pool.problem == nil ? "ok" : pool.reachable ? "PROBLEM" : "UNREACHABLE"
                let schema = pool.migrationsApplied.map { "schema \($0)/\(pool.migrationsKnown)" } ?? "schema not read"
                let server = pool.serverVersion.map { "PostgreSQL \($0), " } ?? ""
                table.append("team pool", status, "\(pool.address) as \(pool.machine): \(server)\(schema)")
            }
            var lines = [table.render()]
            for library in report.libraries {
                if let problem = library.problem { lines.append("\(library.name): \(problem)") }
            }
            if let problem = directory.problem { lines.append("data directory: \(problem)") }
            for endpoint in report.endpoints {
                if let problem = endpoint.problem { lines.append("\(endpoint.name): \(problem)") }
            }
            if let problem = report.pool?.problem { lines.append("team pool: \(problem)") }
            lines.append(report.isHealthy ? "All checks passed." : "Some checks failed.")
            return lines.joined(separator: "\n")
        }
    }
}

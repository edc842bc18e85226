import ChappieSystem
import ChappieText
import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

/// `--failover`, `--resume` and `--max-failovers`, as `exec` and `lease run` take them.
struct FailoverOptions: ParsableArguments {
    @Flag(
        help: """
            When the command exits non-zero with its account at its limit, resume its session as the account with the most \
            headroom (chappie stays the command's parent).
            """)
    var failover = false
    @Option(
        help: ArgumentHelp(
            "The command that resumes the job, {session} standing for its session id (default for codex exec: Codex's resume of it).",
            valueName: "command"))
    var resume: String?
    @Option(help: ArgumentHelp("At most this many failovers (default 3).", valueName: "count")) var maxFailovers: Int?

    func validate() throws {
        if !failover, resume != nil { throw ValidationError("--resume goes with --failover") }
        if !failover, maxFailovers != nil { throw ValidationError("--max-failovers goes with --failover") }
        if let maxFailovers, !(0...100).contains(maxFailovers) { throw ValidationError("--max-failovers must be 0 to 100") }
    }

    /// The service's options for `command`, when `--failover` is given; a usage error (exit 2)
    /// when the command cannot be resumed.
    func options(for command: [String]) throws -> JobFailover.Options? {
        guard failover else { return nil }
        do {
            return try JobFailover.Options(job: command, resume: resume, maxFailovers: maxFailovers ?? 3)
        } catch {
            throw ValidationError(error.message)
        }
    }
}

/// Runs a job chappie stays the parent of: a signal goes to the command of the moment (SIGTERM and
/// SIGHUP passed on; Ctrl-C reached it from the terminal) and no command starts after it; between
/// commands it stops chappie's own work as ``cancellingOnSignals(releasing:passingTo:_:)`` does.
/// Each line reported goes to stderr as "chappie: …".
func runAsParent(
    printing: @escaping @Sendable (String) -> Bool = { _ in true },
    _ body: @escaping @Sendable (_ control: JobControl, _ report: @escaping @Sendable (String) -> Void) async throws -> Int32
) async throws {
    let control = JobControl()
    let report: @Sendable (String) -> Void = { message in
        if printing(message) { StandardStream.error.write("chappie: \(TerminalText.sanitized(message))\n") }
    }
    let status = try await cancellingOnSignals(passingTo: control) { try await body(control, report) }
    if status != 0 { throw ExitCode(status) }
}

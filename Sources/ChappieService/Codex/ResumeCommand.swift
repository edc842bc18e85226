import ChappieText
import ChappieCore
import Foundation

/// The command that takes a job up again as another account, after its own stopped at its limit
/// (`exec --failover`, `lease run --failover`): `--resume 'CMD'`, or Codex's own resume of the
/// job's session for a `codex exec …` job.
///
/// `{session}` in any word stands for the id of the session the job wrote.
public struct ResumeCommand: Sendable, Equatable {
    /// The words, with ``placeholder`` where the session id goes.
    public let template: [String]

    /// What stands for the session id.
    public static let placeholder = "{session}"
    /// The prompt Codex's default resume sends after the session's history.
    public static let continuation = "Continue the task from where you stopped."

    /// A resume command from `--resume`'s text, split as ``CommandWords`` splits.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` when the text is not a command line or has no
    ///   `{session}`.
    public init(parsing line: String) throws(ServiceError) {
        let words: [String]
        do {
            words = try CommandWords.split(line)
        } catch {
            throw ServiceError(.invalidInput, "--resume is not a command line: \(error)")
        }
        guard words.contains(where: { $0.contains(Self.placeholder) }) else {
            throw ServiceError(
                .invalidInput,
                "--resume must say where the session id goes with {session}, for example: --resume 'codex exec resume {session} continue'")
        }
        template = words
    }

    private init(template: [String]) {
        self.template = template
    }

    /// The command with the session id in place of every `{session}`.
    public func command(session: String) -> [String] {
        template.map { $0.replacingOccurrences(of: Self.placeholder, with: session) }
    }

    /// Codex's resume of a `codex [OPTIONS] exec [OPTIONS] PROMPT` job: the same program and
    /// options, then `resume {session}` and ``continuation`` in place of the prompt. Images
    /// (`-i`) are not attached again.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput`, saying to give `--resume`, when the job is not
    ///   such a command, or is `--ephemeral` (it writes no session to resume).
    public static func codexDefault(for job: [String]) throws(ServiceError) -> ResumeCommand {
        let needed = "give --resume 'CMD' with {session} where the session id goes"
        guard let program = job.first, URL(fileURLWithPath: program).lastPathComponent == "codex" else {
            throw ServiceError(.invalidInput, "--failover resumes codex exec jobs by itself; for \(Self.name(job)), \(needed)")
        }
        var index = 1
        // Codex's own options before the subcommand.
        while index < job.count, job[index].hasPrefix("-"), job[index] != "--" {
            index += takesValue(job[index]) ? 2 : 1
        }
        guard index < job.count, ["exec", "e"].contains(job[index]) else {
            throw ServiceError(.invalidInput, "--failover resumes codex exec jobs by itself; this codex command is not one, so \(needed)")
        }
        var words = Array(job[...index])
        index += 1
        var prompts = 0
        while index < job.count {
            let word = job[index]
            if word == "--" {
                prompts += job.count - index - 1
                break
            }
            if word == "--ephemeral" {
                throw ServiceError(.invalidInput, "an --ephemeral codex exec writes no session, so --failover has nothing to resume")
            }
            if word.hasPrefix("-"), word != "-" {
                let width = takesValue(word) ? 2 : 1
                if !["-i", "--image"].contains(word), !word.hasPrefix("--image=") { words += job[index..<min(job.count, index + width)] }
                index += width
                continue
            }
            if prompts == 0, ["resume", "review", "help"].contains(word) {
                throw ServiceError(.invalidInput, "--failover resumes only a new codex exec job; for codex exec \(word), \(needed)")
            }
            prompts += 1
            index += 1
        }
        guard prompts <= 1 else { throw ServiceError(.invalidInput, "this codex exec has more than one prompt argument; \(needed)") }
        return ResumeCommand(template: words + ["resume", placeholder, continuation])
    }

    /// Whether a Codex option takes the next word as its value (`-m MODEL`); `--name=value`,
    /// `-mMODEL` and flags do not.
    private static func takesValue(_ option: String) -> Bool {
        [
            "-c", "--config", "--enable", "--disable", "-i", "--image", "-m", "--model", "--local-provider", "-p", "--profile", "-s",
            "--sandbox", "-a", "--ask-for-approval", "-C", "--cd", "--add-dir", "--output-schema", "--color", "-o",
            "--output-last-message", "--thread-source", "--cyber-access-program",
        ].contains(option)
    }

    /// The program's name, for a message (its arguments may hold secrets).
    private static func name(_ job: [String]) -> String {
        job.first.map { TerminalText.sanitized(URL(fileURLWithPath: $0).lastPathComponent) } ?? "an empty command"
    }
}

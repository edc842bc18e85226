import ArgumentParser
import ChappieService

/// A library error turned into a message and an exit code (``FailureDescription``).
struct CommandFailure: Error {
    let message: String
    let exitCode: ExitCode

    init(message: String, exitCode: ExitCode) {
        self.message = message
        self.exitCode = exitCode
    }

    /// The failure for an error chappie's libraries throw; `nil` for others (argument-parser's own).
    init?(_ error: any Error) {
        guard let description = FailureDescription(error) else { return nil }
        self.init(message: description.message, exitCode: ExitCode(description.exitCode))
    }
}

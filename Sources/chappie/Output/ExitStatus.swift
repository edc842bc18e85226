import ArgumentParser
import ChappieCore

/// chappie's exit codes (``ChappieExitCode``) as argument-parser's.
enum ExitStatus {
    /// A service did not answer or answered wrongly (EX_UNAVAILABLE).
    static let serviceUnavailable = ExitCode(ChappieExitCode.serviceUnavailable)
    /// Try again later (EX_TEMPFAIL).
    static let temporaryFailure = ExitCode(ChappieExitCode.temporaryFailure)
    /// An account must be signed in again (EX_NOPERM).
    static let signInRequired = ExitCode(ChappieExitCode.signInRequired)
    /// Configuration or key problem (EX_CONFIG).
    static let configuration = ExitCode(ChappieExitCode.configuration)
}

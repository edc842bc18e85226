import ArgumentParser
import ChappieService

/// chappie's exit codes (``FailureDescription/ExitCode``) as argument-parser's.
enum ExitStatus {
    /// A service did not answer or answered wrongly (EX_UNAVAILABLE).
    static let serviceUnavailable = ExitCode(FailureDescription.ExitCode.serviceUnavailable)
    /// Try again later (EX_TEMPFAIL).
    static let temporaryFailure = ExitCode(FailureDescription.ExitCode.temporaryFailure)
    /// An account must be signed in again (EX_NOPERM).
    static let signInRequired = ExitCode(FailureDescription.ExitCode.signInRequired)
    /// Configuration or key problem (EX_CONFIG).
    static let configuration = ExitCode(FailureDescription.ExitCode.configuration)
}

import ArgumentParser

/// chappie's exit codes (design.md, Errors), on top of argument-parser's 0, 1 and 2.
enum ExitStatus {
    /// A service did not answer or answered wrongly (EX_UNAVAILABLE).
    static let serviceUnavailable = ExitCode(69)
    /// Try again later (EX_TEMPFAIL).
    static let temporaryFailure = ExitCode(75)
    /// An account must be signed in again (EX_NOPERM).
    static let signInRequired = ExitCode(77)
    /// Configuration or key problem (EX_CONFIG).
    static let configuration = ExitCode(78)
}

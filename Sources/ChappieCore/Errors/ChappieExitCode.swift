/// chappie's exit codes (docs/errors.md): the one list the command line, the daemon's socket and
/// the error classes use.
package enum ChappieExitCode {
    /// Success.
    package static let success: Int32 = 0
    /// Any other failure (a permanent error).
    package static let failure: Int32 = 1
    /// A wrong argument or request.
    package static let usage: Int32 = 2
    /// A service did not answer or answered wrongly (EX_UNAVAILABLE).
    package static let serviceUnavailable: Int32 = 69
    /// Try again later (EX_TEMPFAIL).
    package static let temporaryFailure: Int32 = 75
    /// An account must be signed in again, or access is refused (EX_NOPERM).
    package static let signInRequired: Int32 = 77
    /// A configuration or key problem (EX_CONFIG).
    package static let configuration: Int32 = 78
    /// Interrupted: cancelled by Ctrl-C or a signal, as a shell reports SIGINT (128 + 2).
    package static let interrupted: Int32 = 130

    /// The exit code of a run with several results (`refresh --all`): the most serious decides,
    /// sign in again (77) over try later (75) over any other failure (the first of those).
    package static func mostSerious(_ codes: [Int32]) -> Int32 {
        func rank(_ code: Int32) -> Int {
            code == signInRequired ? 3 : code == temporaryFailure ? 2 : code == success ? 0 : 1
        }
        return codes.max { rank($0) < rank($1) } ?? success
    }
}

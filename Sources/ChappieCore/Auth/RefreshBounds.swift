package import Synchronization

/// How long each step of a refresh may take. Once a refresh request is sent the issuer may already
/// have rotated the token, so giving up on its answer early signs the account out at the next
/// refresh (`refresh_token_reused`): the answer is awaited, within a bound every other timeout
/// around it is set above.
package enum RefreshBounds {
    /// How long a refresh waits for the issuer's answer once its request is sent: 120 seconds.
    package static let answerTimeout: Duration = .seconds(120)

    /// How many refreshes of this process are at the issuer, or being stored: from the request
    /// sent to the answer committed. A process stopping says it waits for them only while there are.
    package static let inFlight = Atomic<Int>(0)
}

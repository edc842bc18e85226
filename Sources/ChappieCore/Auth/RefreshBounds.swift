/// How long each step of a refresh may take. Once a refresh request is sent the issuer may already
/// have rotated the token, so giving up on its answer early signs the account out at the next
/// refresh (`refresh_token_reused`): the answer is awaited, within a bound every other timeout
/// around it is set above.
package enum RefreshBounds {
    /// How long a refresh waits for the issuer's answer once its request is sent: 120 seconds.
    package static let answerTimeout: Duration = .seconds(120)
}

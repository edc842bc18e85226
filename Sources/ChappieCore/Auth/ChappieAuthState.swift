public import Foundation

/// Where a session is in its sign-in lifecycle (docs/sdk.md).
public enum ChappieAuthState: Sendable, Hashable {
    /// No credential is stored.
    case signedOut
    /// Sign-in has started; the device code is being requested.
    case signingIn
    /// The code is ready: the user enters `userCode` at `verificationURL`.
    case awaitingDeviceCode(userCode: String, verificationURL: URL)
    /// Signed in; `expiresAt` is the access token's expiry, if known.
    case signedIn(expiresAt: Date?)
    /// The refresh token is invalid or missing: sign in again.
    case reauthenticationRequired
    /// An unrecoverable error, as a message for people.
    case failed(String)
}

/// Fine-grained progress of a device-code sign-in.
public enum ChappieDeviceLinkState: Sendable, Hashable {
    /// Nothing in progress.
    case idle
    /// Asking for a user code.
    case requestingCode
    /// Polling: the code, where to enter it, when it expires, and how often chappie asks.
    case waitingForApproval(userCode: String, verificationURL: URL, expiresAt: Date, interval: Duration)
    /// Approved: exchanging the authorization code for tokens.
    case exchangingCode
    /// Done.
    case completed
}

public import ChappieCore
public import Foundation

/// What `accounts remove` did.
public struct AccountRemoval: Sendable {
    /// Whether the account's refresh token was revoked at the issuer before it was removed.
    public var revoked: Bool
    /// Why the revocation failed, when `force` removed the account anyway.
    public var revocationFailure: String?
    /// The `auth.json` removed from the Codex home the account owned: Codex has no login there now.
    public var codexLogin: URL?
}

extension ChappieServices {
    /// Removes an account, its credentials and its usage history. With `revoking`, its refresh
    /// token is revoked at the issuer first, and a revocation that fails removes nothing, unless
    /// `force`: then the account is removed and the failure is reported.
    ///
    /// - Throws: ``ServiceError`` when the revocation fails without `force` (its recovery is the
    ///   revocation's: try again later, sign in again, …); the store's errors.
    public func removeAccount(_ name: AccountName, revoking: Bool, force: Bool) async throws -> AccountRemoval {
        var removal = AccountRemoval(revoked: false)
        if revoking {
            do {
                try await tokens.revoke(name)
                removal.revoked = true
            } catch {
                let failure = FailureDescription(error, account: name) ?? FailureDescription(message: "\(error)", exitCode: ChappieExitCode.failure)
                guard force else {
                    throw ServiceError(
                        ServiceError.Code(exitCode: failure.exitCode),
                        "could not revoke \(name)'s refresh token: \(failure.message) Nothing was removed; pass --force to remove it anyway.",
                        underlying: error)
                }
                removal.revocationFailure = failure.message
            }
        }
        let note =
            if removal.revoked { "its refresh token was revoked at the issuer" } else if removal.revocationFailure != nil {
                "its refresh token could not be revoked (--force)"
            } else { "" }
        removal.codexLogin = try await accounts.remove(name, note: note)
        return removal
    }
}

extension ServiceError.Code {
    /// The code whose recovery gives this exit code (a failure carried over from another error).
    init(exitCode: Int32) {
        self =
            switch exitCode {
            case ChappieExitCode.temporaryFailure: .unavailable
            case ChappieExitCode.signInRequired: .signInRequired
            case ChappieExitCode.configuration: .configuration
            default: .failed
            }
    }
}

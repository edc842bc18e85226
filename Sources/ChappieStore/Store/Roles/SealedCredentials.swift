package import ChappieCore
package import Foundation

/// Each account's tokens, sealed with the store's key and bound to the account's ``Account/uuid``
/// and the key id (a blob moved to another account, or sealed by another key, does not open), and
/// the one rule that keeps a rotating refresh token from being redeemed twice: its refresh lock.
package protocol SealedCredentials: Sendable {
    /// Opens an account's sealed credentials (tokens kept in a recovery file, when newer). Throws
    /// `.credentialUnreadable` when they do not open; other accounts are not affected.
    func credentials(for account: Account) async throws(StoreError) -> Credentials
    /// Which of these accounts' sealed credentials do not open, and why (authenticated, not decoded).
    func credentialProblems(of accounts: [Account]) async throws(StoreError) -> [Int64: String]
    /// Stores refreshed (or adopted) tokens of an existing account: status back to ok, error cleared.
    func updateCredentials(
        of account: Account, to credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date, event: AuditEventKind,
        detail: String
    ) async throws(StoreError) -> Account
    /// Keeps tokens that could not be committed sealed outside the database, where every later read
    /// finds them and the next open adopts them. Call it holding the account's refresh lock.
    func keepForRecovery(_ credentials: Credentials, of account: Account, accessTokenExpiresAt: Date?, refreshedAt: Date)
        async throws(StoreError) -> URL
    /// Reserves room for the account's recovery file before its refresh token is redeemed, so that
    /// tokens whose commit fails can still be kept on a disk that filled up meanwhile. Call it
    /// holding the account's refresh lock.
    ///
    /// - Throws: ``StoreError`` `.unavailable` when there is no room: then nothing may be redeemed.
    func reserveRecovery(for account: Account) async throws(StoreError)
    /// Keeps tokens that must not be used (a refresh reply naming another account, or tokens that do
    /// not parse) sealed in `quarantine/` in the data directory, which nothing adopts by itself: a
    /// person decides. Returns the file.
    func quarantine(_ credentials: Credentials, of account: Account) async throws(StoreError) -> URL
    /// Records a failure on an account: with `status` `.reauthRequired` it needs a new sign-in.
    func recordFailure(of account: Account, message: String, status: AccountStatus?, event: AuditEventKind) async throws(StoreError)
    /// How many credentials each key id seals (normally all under the store's key).
    func credentialCountsByKey() async throws(StoreError) -> [String: Int]

    /// Runs `body` holding the refresh locks of these accounts (taken in id order), so that no
    /// other process — nor the Codex CLI's refresh through chappie — redeems their refresh tokens
    /// meanwhile. A lock held by a process that dies is released.
    nonisolated(nonsending) func withRefreshLock<T>(onAccounts ids: [Int64], _ body: () async throws -> T) async throws -> T
}

extension SealedCredentials {
    /// Runs `body` holding one account's refresh lock.
    nonisolated(nonsending) public func withRefreshLock<T>(on account: Account, _ body: () async throws -> T) async throws -> T {
        try await withRefreshLock(onAccounts: [account.id], body)
    }

    /// Stores refreshed (or adopted) tokens, with no audit detail.
    package func updateCredentials(
        of account: Account, to credentials: Credentials, accessTokenExpiresAt: Date?, refreshedAt: Date, event: AuditEventKind
    ) async throws(StoreError) -> Account {
        try await updateCredentials(
            of: account, to: credentials, accessTokenExpiresAt: accessTokenExpiresAt, refreshedAt: refreshedAt, event: event, detail: "")
    }

    /// Records a failure without changing the account's status.
    package func recordFailure(of account: Account, message: String, event: AuditEventKind) async throws(StoreError) {
        try await recordFailure(of: account, message: message, status: nil, event: event)
    }
}

/// What an audit-log entry records. Every writer (the store, the SDK's refresher, the services)
/// names its entries with these; the raw values are what the log stores and `chappie log` prints.
package enum AuditEventKind: String, Sendable, Codable, CaseIterable {
    /// An account was signed in with the device-code flow.
    case signedIn = "signed_in"
    /// An account was imported from a Codex `auth.json`.
    case imported
    /// An account was added or updated from a backup (`chappie restore`).
    case restored
    /// An account's tokens were refreshed at the issuer.
    case refreshed
    /// Newer tokens someone else obtained (another process, the Codex CLI) were taken.
    case adopted
    /// Tokens a refresh could not store were adopted from a recovery file.
    case recovered
    /// New tokens named another plan or e-mail for the same account (a plan upgrade, say); the
    /// detail says from what to what (`plan plus → pro`).
    case identityChanged = "identity_changed"
    /// A refresh failed; the detail says why.
    case refreshFailed = "refresh_failed"
    /// A Codex home held another login, so refreshed tokens were not written there.
    case mirrorSkipped = "mirror_skipped"
    /// Refreshed tokens could not be written to the owned Codex home.
    case mirrorFailed = "mirror_failed"
    /// An account became the active one (`accounts switch`).
    case switched
    /// The daemon made another account active when the active one reached its limit.
    case autoSwitched = "auto_switched"
    /// An account took a Codex home of its own (`chappie exec` gave it a private one).
    case codexHomeClaimed = "codex_home_claimed"
    /// An account left a Codex home it owned (its `auth.json` there was removed).
    case codexHomeLeft = "codex_home_left"
    /// An account was renamed.
    case renamed
    /// An account was removed.
    case removed
    /// A setting (of the store or of an account) changed.
    case settingChanged = "setting_changed"
    /// The store's key was set up.
    case keyCreated = "key_created"
    /// The store's key was replaced.
    case keyRotated = "key_rotated"
    /// Sealed credentials were bound to the accounts' stable identities (a one-time upgrade).
    case credentialsResealed = "credentials_resealed"
    /// The usage endpoint was polled (the detail says what was sent and what came back).
    case usagePolled = "usage_polled"
    /// A usage poll failed.
    case usagePollFailed = "usage_poll_failed"
    /// Old usage readings were deleted.
    case usagePruned = "usage_pruned"
    /// A banked rate-limit reset credit was redeemed (`chappie credits redeem`); the detail is the
    /// outcome and the credit.
    case creditRedeemed = "credit_redeemed"
    /// A lease on the account was taken (the detail names the holder).
    case leaseAcquired = "lease_acquired"
    /// A lease was given back.
    case leaseReleased = "lease_released"
    /// A lease whose holder stopped renewing it expired, and its slot was taken over.
    case leaseExpired = "lease_expired"
    /// A job that stopped at its account's limit was resumed as another account (`--failover`);
    /// the detail names both, the session and the count.
    case failover
}

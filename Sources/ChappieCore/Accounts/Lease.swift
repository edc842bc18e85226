package import Foundation

/// A lease on an account: for as long as it lasts, its holder uses the account, and no more than
/// the account's ``Account/maxLeases`` leases hold it at once (`chappie lease`, docs/team-pool.md).
/// A holder renews it while it works; one that dies stops renewing, and the lease expires and its
/// slot is taken over.
package struct Lease: Sendable, Hashable, Codable {
    /// The lease's id, for `lease renew` and `lease release`.
    package var id: UUID
    /// The account's store id.
    package var accountID: Int64
    /// The account's name.
    package var accountName: AccountName
    /// The machine that holds it.
    package var machine: String
    /// Who holds it: a description such as `pid 4242: make test`.
    package var holder: String
    /// Whether it takes every slot of the account (it hands out a Codex home).
    package var wholeAccount: Bool
    /// When it was taken.
    package var acquiredAt: Date
    /// When it expires unless renewed.
    package var expiresAt: Date

    /// Creates a lease as a store reads it.
    package init(
        id: UUID, accountID: Int64, accountName: AccountName, machine: String, holder: String, wholeAccount: Bool, acquiredAt: Date, expiresAt: Date
    ) {
        self.id = id
        self.accountID = accountID
        self.accountName = accountName
        self.machine = machine
        self.holder = holder
        self.wholeAccount = wholeAccount
        self.acquiredAt = acquiredAt
        self.expiresAt = expiresAt
    }

    /// An account a lease may be taken on, in the order of preference.
    package struct Candidate: Sendable, Hashable {
        /// The account's store id.
        package var accountID: Int64
        /// Whether the lease would take every slot (it hands out the account's Codex home).
        package var wholeAccount: Bool

        /// Creates a candidate.
        package init(accountID: Int64, wholeAccount: Bool) {
            self.accountID = accountID
            self.wholeAccount = wholeAccount
        }
    }
}

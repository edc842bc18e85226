package import ChappieCore
package import Foundation

/// Who may use an account now: leases with slots and expiry, and the claims that share usage polls
/// among the machines of a team pool.
package protocol LeaseBook: Sendable {
    /// Takes a lease on the first of `candidates` that has a free slot (a whole-account lease needs
    /// all of them), in one transaction that first deletes expired leases (taking their slots over),
    /// and skips an account another machine is taking a lease on at that moment. Accounts whose
    /// status is not `ok` are passed over. `nil` when none has room.
    func acquireLease(on candidates: [Lease.Candidate], holder: String, ttl: Duration) async throws(StoreError) -> Lease?
    /// Extends a lease to `ttl` from now. Throws `.notFound` when it expired and was taken over, or
    /// was released.
    func renewLease(_ id: UUID, ttl: Duration) async throws(StoreError) -> Lease
    /// Gives a lease back (nothing happens if it is gone already).
    func releaseLease(_ id: UUID) async throws(StoreError)
    /// Every lease that has not expired, by account name then time.
    func leases() async throws(StoreError) -> [Lease]
    /// Claims the usage polls of these accounts for `period`: the ones this process is to poll. On
    /// the team pool, an account another machine claimed within the period is left out, so each is
    /// polled once per interval fleet-wide; on one machine (one daemon per data directory), all.
    func claimPolls(of ids: [Int64], for period: Duration) async throws(StoreError) -> Set<Int64>
}

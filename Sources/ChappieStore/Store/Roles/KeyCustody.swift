package import ChappieVault

/// The key the credentials are sealed with, as this process holds it: which key it is, whether it is
/// still the store's, and a hold that keeps a rotation from committing while something seals.
package protocol KeyCustody: Sendable {
    /// The key credentials are sealed with (after a rotation by another process, the new key once
    /// it has been read again).
    var key: SecretKey { get }

    /// Runs `body` holding the key steady (no rotation can commit meanwhile), having taken up a key
    /// another process rotated to: what `body` seals stays openable. Refreshes hold it from
    /// redemption to commit.
    nonisolated(nonsending) func withKeyHeld<T>(_ body: () async throws -> T) async throws -> T
    /// Whether the key this store was unlocked with is still the store's key.
    func keyIsCurrent() async throws(StoreError) -> Bool
    /// Whether the key can change under this process without it being able to follow (another
    /// machine's operator replacing a team pool's key): a daemon then goes on, refusing to seal,
    /// rather than stop.
    var keyChangesElsewhere: Bool { get }
}

package import ChappieCore
package import ChappieVault
package import Foundation

// Tokens a refresh redeemed but could not commit are kept sealed in a recovery file in the local
// data directory, on every backend: what such a file holds, and what it is worth.

/// What a recovery file holds besides the sealed tokens.
package struct RecoveryFile: Codable {
    /// 1: sealed bound to the account's row id; 2: to its UUID (``CredentialBinding``).
    package var version = 2
    package var accountId: Int64
    package var keyId: String
    package var savedAt: Date
    /// The nonce of the credential row these tokens were meant to replace: while the row still
    /// has it, the file is newer; once the row changed, the file is stale. (`nil` when the row
    /// could not be read; then `savedAt` is compared with the row's time.)
    package var baseNonce: Data?
    package var accessExpiresAt: Date?
    package var refreshedAt: Date
    package var nonce: Data
    package var ciphertext: Data
}

extension RecoveryFile {
    /// Seals an account's new tokens as the stores seal them (the key, associated data naming the
    /// account's UUID and the key) and writes them to `url`, 0600, synced with its directory (0700).
    ///
    /// - Parameter baseNonce: The nonce of the stored credential these tokens replace, if it could be read.
    /// - Throws: ``StoreError`` `.io` when even this cannot be written.
    package static func keep(
        _ credentials: Credentials, of account: Account, key: SecretKey, baseNonce: Data?, accessExpiresAt: Date?, refreshedAt: Date, at url: URL
    ) throws(StoreError) {
        try FilePermissions.refuseLink(url.deletingLastPathComponent())
        try FilePermissions.ensurePrivateDirectory(url.deletingLastPathComponent())
        do {
            let box = try CredentialSealing.seal(credentials, key: key, accountID: account.id, uuid: account.uuid)
            let file = RecoveryFile(
                accountId: account.id, keyId: key.id, savedAt: Date(), baseNonce: baseNonce, accessExpiresAt: accessExpiresAt,
                refreshedAt: refreshedAt, nonce: box.nonce, ciphertext: box.ciphertext)
            let bytes = SecretBytes(copying: try JSONEncoder().encode(file))
            // Into the slot reserved before the refresh was sent: no new block is needed, so a disk
            // that filled up meanwhile still takes it. Then named as the recovery file (a rename,
            // which needs no data block); if even that fails, readers find it in the slot.
            if writeInPlace(bytes, into: slotURL(for: url)) {
                if rename(slotURL(for: url).path, url.path) == 0 { PrivateFile.syncDirectory(url.deletingLastPathComponent()) }
                return
            }
            try PrivateFile.write(bytes, to: url)
        } catch {
            throw StoreError(.io, "cannot write the recovery file \(url.path): \(error)")
        }
    }

    /// Seals tokens that must not be used into `quarantine/account-UUID-TIME.sealed` in the data
    /// directory (0600 in 0700), in the recovery file's format: nothing reads that directory, so they
    /// are never adopted by themselves.
    package static func quarantine(_ credentials: Credentials, of account: Account, key: SecretKey, in location: StoreLocation) throws(StoreError)
        -> URL
    {
        let name = "account-\(account.uuid.uuidString.lowercased())-\(Int(Date().timeIntervalSince1970 * 1000)).sealed"
        let url = location.directory.appendingPathComponent("quarantine").appendingPathComponent(name)
        try keep(credentials, of: account, key: key, baseNonce: nil, accessExpiresAt: nil, refreshedAt: Date(), at: url)
        return url
    }

    /// How much a recovery slot reserves: several times a sealed set of tokens.
    package static let slotBytes = 64 * 1024

    /// The slot beside a recovery file (`account-ID.slot`): space reserved before a refresh is
    /// sent, which the redeemed tokens are written into if their commit fails.
    package static func slotURL(for url: URL) -> URL {
        url.deletingPathExtension().appendingPathExtension("slot")
    }

    /// Reserves the slot of the recovery file at `url` (0600, allocated on disk, synced). Called
    /// before a refresh token is redeemed: if the disk has no room for it, nothing is redeemed.
    ///
    /// - Throws: ``StoreError`` `.unavailable` when the space cannot be reserved.
    package static func reserveSlot(for url: URL) throws(StoreError) {
        let directory = url.deletingLastPathComponent()
        try FilePermissions.refuseLink(directory)
        try FilePermissions.ensurePrivateDirectory(directory)
        let slot = slotURL(for: url)
        try FilePermissions.refuseLink(slot)
        // Tokens left in the slot (its rename failed) are named as the recovery file first, never
        // padded with the new reservation's zeros.
        if FileManager.default.contents(atPath: url.path) == nil, pendingData(at: url) != nil {
            guard rename(slot.path, url.path) == 0 else { throw noRoom(directory, String(cString: strerror(errno))) }
            PrivateFile.syncDirectory(directory)
        }
        let descriptor = open(slot.path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw noRoom(directory, String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var result = posix_fallocate(descriptor, 0, off_t(slotBytes))
        if result == EOPNOTSUPP || result == EINVAL {
            // A file system without fallocate: the same blocks, written.
            let zeros = [UInt8](repeating: 0, count: slotBytes)
            result = pwrite(descriptor, zeros, zeros.count, 0) == zeros.count ? 0 : errno
        }
        guard result == 0, fsync(descriptor) == 0 else { throw noRoom(directory, String(cString: strerror(result == 0 ? errno : result))) }
    }

    private static func noRoom(_ directory: URL, _ reason: String) -> StoreError {
        StoreError(
            .unavailable,
            "cannot reserve room in \(directory.path) to keep refreshed tokens safe (\(reason)); free some space and try again. Nothing was redeemed")
    }

    /// Writes `bytes` at the start of the reserved slot and cuts it to their length, synced; `false`
    /// when there is no slot large enough.
    private static func writeInPlace(_ bytes: SecretBytes, into slot: URL) -> Bool {
        let descriptor = open(slot.path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) >= bytes.count else { return false }
        let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return written == bytes.count && ftruncate(descriptor, off_t(bytes.count)) == 0 && fsync(descriptor) == 0
    }

    /// The bytes of the recovery file at `url`, or of its slot when the tokens stayed there; `nil`
    /// when neither holds any (a reserved slot reads as zeros).
    package static func pendingData(at url: URL) -> Data? {
        if let data = FileManager.default.contents(atPath: url.path) { return data }
        let slot = slotURL(for: url)
        guard (try? FilePermissions.refuseLink(slot)) != nil, let handle = FileHandle(forReadingAtPath: slot.path) else { return nil }
        defer { try? handle.close() }
        guard let first = try? handle.read(upToCount: 1), first.first.map({ $0 != 0 }) == true else { return nil }
        // A chappie killed between writing and cutting the slot leaves the reservation's zeros after the tokens.
        var data = first + ((try? handle.readToEnd()) ?? Data())
        while data.last == 0 { data.removeLast() }
        return data
    }

    /// Removes the recovery file at `url`, and its slot when the tokens were left there.
    package static func remove(at url: URL) {
        var removed = unlink(url.path) == 0
        if FileManager.default.contents(atPath: url.path) == nil, pendingData(at: url) != nil {
            removed = unlink(slotURL(for: url).path) == 0 || removed
        }
        if removed { PrivateFile.syncDirectory(url.deletingLastPathComponent()) }
    }

    /// What the recovery file at `url` is worth against the account's stored credential (its nonce
    /// and time, `nil` when there is none).
    package static func state(at url: URL, accountID: Int64, uuid: UUID, key: SecretKey, storedNonce: Data?, storedAt: Date?) -> RecoveryState {
        // Kept for a person to look at, never followed: a link could name any file of the user's.
        if (try? FilePermissions.refuseLink(url)) == nil { return .unreadable("\(url.path) is a symbolic link, not a recovery file") }
        guard let data = pendingData(at: url) else { return .none }
        guard let file = try? JSONDecoder().decode(RecoveryFile.self, from: data), file.accountId == accountID else {
            return .unreadable("\(url.path) is not a recovery file of this account")
        }
        if let base = file.baseNonce {
            if let storedNonce, storedNonce != base { return .stale }
        } else if let storedAt, storedAt >= file.savedAt {
            return .stale
        }
        guard file.keyId == key.id else {
            return .unreadable("\(url.path) is sealed with key \(file.keyId), not the store's key \(key.id)")
        }
        let binding: CredentialBinding = file.version == 1 ? .rowID : .uuid
        guard
            let opened = try? SealedBox(nonce: file.nonce, ciphertext: file.ciphertext)
                .open(key: key, associatedData: binding.associatedData(accountID: accountID, uuid: uuid, keyID: key.id)),
            let credentials = try? CredentialSealing.decode(opened, label: "the recovered tokens")
        else { return .unreadable("\(url.path) does not open with the store's key") }
        return .pending(PendingRecovery(credentials: credentials, accessExpiresAt: file.accessExpiresAt, refreshedAt: file.refreshedAt))
    }
}

/// Opened tokens from a recovery file that are newer than the stored ones.
package struct PendingRecovery {
    package var credentials: Credentials
    package var accessExpiresAt: Date?
    package var refreshedAt: Date
}

/// What an account's recovery file is worth against its stored credential row.
package enum RecoveryState {
    /// There is no recovery file.
    case none
    /// The database changed since the file was written: its tokens are older (safe to remove).
    case stale
    /// Newer tokens than the database's: to be used, and adopted.
    case pending(PendingRecovery)
    /// A file that cannot be read or opened: kept, never removed, never used.
    case unreadable(String)
}

/// Sealing and opening an account's tokens, the same on every backend.
package enum CredentialSealing {
    /// Seals tokens with a key, bound to the account's UUID and the key (``CredentialBinding/uuid``).
    package static func seal(_ credentials: Credentials, key: SecretKey, accountID: Int64, uuid: UUID) throws -> SealedBox {
        var json = try JSONEncoder().encode(credentials)
        defer { json.zeroize() }
        return SealedBox.seal(
            SecretBytes(copying: json), key: key,
            associatedData: CredentialBinding.uuid.associatedData(accountID: accountID, uuid: uuid, keyID: key.id))
    }

    /// Decodes opened credential bytes, zeroing the decoder's copy.
    package static func decode(_ opened: SecretBytes, label: String) throws(StoreError) -> Credentials {
        var plain = opened.unprotectedData()
        defer { plain.zeroize() }
        guard let credentials = try? JSONDecoder().decode(Credentials.self, from: plain) else {
            throw StoreError(.credentialUnreadable, "\(label) are not in the expected form; sign it in again")
        }
        return credentials
    }
}

internal import CSodium
public import Foundation

/// A key file: one line of base64 (or exactly 32 raw bytes), readable by its owner only.
public enum KeyFile {
    /// Reads a key file, refusing one that group or others can read, one owned by another user, and
    /// one reached through a symbolic link (which another user could point elsewhere).
    ///
    /// - Parameters:
    ///   - url: The key file.
    ///   - trustingLocation: For systemd's `$CREDENTIALS_DIRECTORY`, whose files systemd owns and
    ///     may link: the owner and link checks are skipped (the mode check stays).
    /// - Throws: ``VaultError/Code/keyFile`` when the file is missing, too open, not its user's, a
    ///   link, or not a key.
    public static func read(_ url: URL, trustingLocation: Bool = false) throws(VaultError) -> SecretKey {
        var info = stat()
        guard lstat(url.path, &info) == 0 else {
            throw VaultError(.keyFile, "key file \(url.path) cannot be read: \(String(cString: strerror(errno)))")
        }
        if !trustingLocation {
            if (info.st_mode & S_IFMT) == S_IFLNK {
                throw VaultError(.keyFile, "key file \(url.path) is a symbolic link; point --key-file at the file itself")
            }
            if info.st_uid != geteuid() {
                throw VaultError(
                    .keyFile, "key file \(url.path) belongs to user \(info.st_uid), not to you (\(geteuid())); a key file must be your own")
            }
        } else {
            guard stat(url.path, &info) == 0 else {
                throw VaultError(.keyFile, "key file \(url.path) cannot be read: \(String(cString: strerror(errno)))")
            }
        }
        let mode = Int(info.st_mode) & 0o777
        if mode & 0o077 != 0 {
            throw VaultError(
                .keyFile,
                "key file \(url.path) is readable by group or others (mode \(String(mode, radix: 8))); run: chmod 600 \(url.path)")
        }
        guard var contents = try? Data(contentsOf: url) else {
            throw VaultError(.keyFile, "key file \(url.path) cannot be read")
        }
        defer { contents.zeroize() }
        if contents.count == SecretKey.byteCount {
            return try SecretKey(bytes: SecretBytes(copying: contents))
        }
        var text = contents
        while let last = text.last, last == 0x0A || last == 0x0D || last == 0x20 { text.removeLast() }
        defer { text.zeroize() }
        guard var decoded = Data(base64Encoded: text), decoded.count == SecretKey.byteCount else {
            throw VaultError(.keyFile, "key file \(url.path) does not hold a key (expected 32 bytes, raw or as one line of base64)")
        }
        defer { decoded.zeroize() }
        return try SecretKey(bytes: SecretBytes(copying: decoded))
    }

    /// Writes a key file atomically (see ``PrivateFile``) in a 0700 directory.
    ///
    /// - Throws: ``VaultError/Code/keyFile`` when it cannot be written.
    public static func write(_ key: SecretKey, to url: URL) throws(VaultError) {
        let directory = url.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw VaultError(.keyFile, "cannot create \(directory.path) for the key file")
        }
        do {
            try PrivateFile.write(key.base64Line(), to: url)
        } catch {
            // The key's own file: a key problem (exit 78), whatever stopped the write.
            throw VaultError(.keyFile, error.message)
        }
    }
}

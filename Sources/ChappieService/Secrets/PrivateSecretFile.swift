import ChappieVault
import Foundation

/// A secret a user keeps in a file of their own: a backup passphrase (`--passphrase-file`) or the
/// bearer secret of the daemon's `/metrics` (`--http-token-file`).
enum PrivateSecretFile {
    /// The file's first line (without its line break; it may be empty), refused unless nobody
    /// else may read the file (mode 0600 or stricter).
    ///
    /// - Parameter what: What the file holds, for messages, such as `passphrase file`.
    /// - Throws: ``ServiceError`` `.configuration` naming the file and what to do, never its content.
    static func firstLine(of file: URL, what: String) throws(ServiceError) -> SecretBytes {
        var info = stat()
        guard stat(file.path, &info) == 0, let data = FileManager.default.contents(atPath: file.path) else {
            throw ServiceError(.configuration, "cannot read the \(what) \(file.path)")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw ServiceError(.configuration, "\(file.path) can be read by others; make it private first: chmod 600 \(file.path)")
        }
        return SecretBytes(copying: data.prefix { $0 != 0x0A && $0 != 0x0D })
    }
}

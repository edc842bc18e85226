import ChappieVault
import Foundation

/// A secret a user keeps in a file of their own: a backup passphrase (`--passphrase-file`) or the
/// bearer secret of the daemon's `/metrics` (`--http-token-file`).
enum PrivateSecretFile {
    /// The most read from such a file.
    static let maximumSize = 4096

    /// The file's first line (without its line break; it may be empty). Refused unless it is a
    /// regular file of this user that nobody else may read (mode 0600 or stricter), checked on the
    /// descriptor that is read, so the file cannot be swapped in between.
    ///
    /// - Parameters:
    ///   - what: What the file holds, for messages, such as `passphrase file`.
    ///   - trimmingWhitespace: Drop spaces and tabs around the line (for a token; a passphrase keeps them).
    /// - Throws: ``ServiceError`` `.configuration` naming the file and what to do, never its content.
    static func firstLine(of file: URL, what: String, trimmingWhitespace: Bool = false) throws(ServiceError) -> SecretBytes {
        let descriptor = open(file.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ServiceError(.configuration, "cannot read the \(what) \(file.path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw ServiceError(.configuration, "the \(what) \(file.path) is not a regular file")
        }
        guard info.st_uid == geteuid() else {
            throw ServiceError(.configuration, "the \(what) \(file.path) belongs to another user; it must be yours")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw ServiceError(.configuration, "\(file.path) can be read by others; make it private first: chmod 600 \(file.path)")
        }
        var count = 0
        let bytes = SecretBytes(count: maximumSize) { buffer in
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            count = read(descriptor, buffer.baseAddress, buffer.count)
        }
        guard count >= 0 else {
            throw ServiceError(.configuration, "cannot read the \(what) \(file.path): \(String(cString: strerror(errno)))")
        }
        return bytes.withUnsafeBytes { buffer in
            var line = buffer.prefix(count).prefix { $0 != 0x0A && $0 != 0x0D }
            if trimmingWhitespace {
                while let first = line.first, first == 0x20 || first == 0x09 { line = line.dropFirst() }
                while let last = line.last, last == 0x20 || last == 0x09 { line = line.dropLast() }
            }
            return SecretBytes(copying: line)
        }
    }
}

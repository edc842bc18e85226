package import Foundation

/// A secret a user keeps in a file of their own: a backup passphrase (`--passphrase-file`), the
/// bearer secret of the daemon's `/metrics` (`--http-token-file`), the team pool's address or
/// database password.
package enum PrivateSecretFile {
    /// The longest first line taken: a longer one is refused, never cut.
    package static let maximumLine = 4096

    /// The file's first line (without its line break; it may be empty). Refused unless it is a
    /// regular file or a pipe (`<(pass show …)`) of this user that nobody else may read (mode 0600
    /// or stricter), checked on the descriptor that is read, so it cannot be swapped in between.
    ///
    /// - Parameters:
    ///   - what: What the file holds, for messages, such as `passphrase file`.
    ///   - trimmingWhitespace: Drop spaces and tabs around the line (for a token; a passphrase keeps them).
    /// - Throws: ``VaultError`` `.secretFile` naming the file and what to do, never its content.
    package static func firstLine(of file: URL, what: String, trimmingWhitespace: Bool = false) throws(VaultError) -> SecretBytes {
        // Not blocking on open (a FIFO without a writer), then blocking reads once it is checked.
        let descriptor = open(file.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw VaultError(.secretFile, "cannot read the \(what) \(file.path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var info = stat()
        let kind = fstat(descriptor, &info) == 0 ? info.st_mode & S_IFMT : 0
        guard kind == S_IFREG || kind == S_IFIFO else {
            throw VaultError(.secretFile, "the \(what) \(file.path) is not a regular file or a pipe")
        }
        guard info.st_uid == geteuid() else {
            throw VaultError(.secretFile, "the \(what) \(file.path) belongs to another user; it must be yours")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw VaultError(.secretFile, "\(file.path) can be read by others; make it private first: chmod 600 \(file.path)")
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        // Up to the first line break, or one byte past the longest line, whatever the reads return.
        var count = 0, failure: Int32 = 0
        let bytes = SecretBytes(count: maximumLine + 1) { buffer in
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            while count < buffer.count, !buffer[..<count].contains(0x0A) {
                let read = Foundation.read(descriptor, buffer.baseAddress! + count, buffer.count - count)
                if read < 0, errno == EINTR { continue }
                if read < 0 { failure = errno }
                if read <= 0 { break }
                count += read
            }
        }
        guard failure == 0 else {
            throw VaultError(.secretFile, "cannot read the \(what) \(file.path): \(String(cString: strerror(failure)))")
        }
        let length = bytes.withUnsafeBytes { buffer in buffer.prefix(count).prefix { $0 != 0x0A && $0 != 0x0D }.count }
        guard length <= maximumLine else {
            throw VaultError(.secretFile, "the first line of the \(what) \(file.path) is longer than \(maximumLine) bytes")
        }
        return bytes.withUnsafeBytes { buffer in
            var line = buffer.prefix(length)
            if trimmingWhitespace {
                while let first = line.first, first == 0x20 || first == 0x09 { line = line.dropFirst() }
                while let last = line.last, last == 0x20 || last == 0x09 { line = line.dropLast() }
            }
            return SecretBytes(copying: line)
        }
    }
}

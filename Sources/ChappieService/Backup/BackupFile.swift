package import ChappieCore
package import ChappieVault
package import Foundation

/// The backup file's format (docs/backup.md): a first line `chappie-backup 1`, a second line of JSON
/// with the Argon2id parameters (no secret), then the 24-byte nonce and the XChaCha20-Poly1305
/// ciphertext of the payload, whose associated data is those two lines, so a changed header fails
/// like a wrong passphrase.
package struct BackupFile {
    /// The first line.
    package static let magic = "chappie-backup 1"

    /// What is sealed: accounts with their tokens, settings, and (optionally) usage readings.
    package struct Payload: Codable {
        /// The payload's own version.
        var version = 1
        /// When the backup was made.
        var createdAt: Date
        /// The chappie that made it.
        var chappieVersion: String
        /// Every account.
        var accounts: [AccountEntry]
        /// The store's settings that are set, by name (`codex-home`, `usage-retention`).
        var settings: [String: String]
        /// Usage readings by account name, when `--usage` was given.
        package var usage: [String: [UsageSample]]?
    }

    /// One account: its name, tokens and the state restore compares.
    package struct AccountEntry: Codable {
        var name: String
        var idToken: String
        var accessToken: String
        var refreshToken: String
        var accessTokenExpiresAt: Date?
        var lastRefreshAt: Date?
        var reservePercent: Double?
        /// `accounts set --auto` and `--priority`; absent from older backups.
        var autoSwitch: Bool?
        var priority: Int?
        var createdAt: Date
    }

    /// The second line.
    package struct Header: Codable {
        var format = "chappie-backup"
        var version = 1
        var kdf: PassphraseKDF
    }

    /// Seals a payload under a passphrase.
    package static func seal(_ payload: Payload, passphrase: SecretBytes) throws -> Data {
        let kdf = PassphraseKDF.freshForFiles()
        let key = try kdf.deriveKey(from: passphrase)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        let plaintext = SecretBytes(copying: try encoder.encode(payload))
        let header = try headerLines(Header(kdf: kdf))
        let box = SealedBox.seal(plaintext, key: key, associatedData: header)
        return Data(header.utf8) + box.nonce + box.ciphertext
    }

    /// The largest backup read: far above a store's worth of accounts and a year of readings, and
    /// far below what would exhaust a machine's memory.
    package static let maximumBytes = 512 << 20

    /// The longest header line read before the file is known to be a backup.
    static let maximumHeaderBytes = 4096

    /// Reads a backup file, looking at its first two lines before anything else: a file that is not
    /// a chappie backup is refused having read at most ``maximumHeaderBytes``, and one larger than
    /// ``maximumBytes`` is refused unread.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` saying what is wrong.
    static func read(_ url: URL) throws(ServiceError) -> Data {
        // Non-blocking, so that a pipe with no writer is refused below rather than waited on.
        let descriptor = Glibc.open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ServiceError(.invalidInput, "cannot read \(url.path): no such file, or not readable")
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        defer { try? handle.close() }
        var status = stat()
        guard fstat(handle.fileDescriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw ServiceError(.invalidInput, "\(url.path) is not a regular file, so it is not a chappie backup")
        }
        let head = (try? handle.read(upToCount: magic.utf8.count + 1 + maximumHeaderBytes + 1)) ?? Data()
        let lines = head.split(separator: 0x0A, maxSplits: 2, omittingEmptySubsequences: false)
        guard lines.count == 3, String(decoding: lines[0], as: UTF8.self) == magic else {
            throw ServiceError(.invalidInput, "\(url.path) is not a chappie backup (it does not start with \"\(magic)\" and a header line)")
        }
        guard status.st_size <= maximumBytes else {
            throw ServiceError(.invalidInput, "\(url.path) is larger than a chappie backup can be (\(maximumBytes >> 20) MiB); nothing was read")
        }
        guard let rest = try? handle.readToEnd() ?? Data(), head.count + rest.count <= maximumBytes else {
            throw ServiceError(.invalidInput, "cannot read \(url.path) whole, or it grew past \(maximumBytes >> 20) MiB")
        }
        return head + rest
    }

    /// Opens a backup.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` for a file that is not a chappie backup, of a
    ///   newer version, or that does not open (a wrong passphrase or a damaged file: the two cannot
    ///   be told apart).
    static func open(_ data: Data, passphrase: SecretBytes, path: String) throws -> Payload {
        let (header, headerText, sealed) = try parseHeader(data, path: path)
        let key: SecretKey
        do {
            key = try header.kdf.deriveKey(from: passphrase)
        } catch {
            throw ServiceError(.invalidInput, "\(path) is damaged: \(error.message)")
        }
        let plaintext: SecretBytes
        do {
            plaintext = try SealedBox(nonce: sealed.prefix(SealedBox.nonceByteCount), ciphertext: sealed.dropFirst(SealedBox.nonceByteCount))
                .open(key: key, associatedData: headerText)
        } catch {
            throw ServiceError(.invalidInput, "\(path) does not open: the passphrase is wrong or the file is damaged. Nothing was changed")
        }
        return try plaintext.withUnsafeBytes { bytes throws(ServiceError) in try decodePayload(Data(bytes), path: path) }
    }

    /// The header of a backup (checked: format, version, key-derivation costs), the header's text
    /// (the associated data) and the sealed rest.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` saying what is wrong.
    package static func parseHeader(_ data: Data, path: String) throws(ServiceError) -> (header: Header, text: String, sealed: Data) {
        let lines = data.split(separator: 0x0A, maxSplits: 2, omittingEmptySubsequences: false)
        guard lines.count == 3, String(decoding: lines[0], as: UTF8.self) == magic else {
            throw ServiceError(.invalidInput, "\(path) is not a chappie backup (it does not start with \"\(magic)\")")
        }
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(lines[1])), header.format == "chappie-backup" else {
            throw ServiceError(.invalidInput, "\(path) is damaged: its header is not readable")
        }
        guard header.version == 1 else {
            throw ServiceError(.invalidInput, "\(path) is a version \(header.version) backup; this chappie reads version 1: upgrade chappie")
        }
        // A damaged header must not make chappie spend minutes or gigabytes: libsodium's "sensitive"
        // costs are the most a backup asks for.
        guard header.kdf.opsLimit <= 4, header.kdf.memLimit <= 1 << 30 else {
            throw ServiceError(.invalidInput, "\(path) is damaged: its key-derivation costs are out of range")
        }
        return (header, String(decoding: data.prefix(lines[0].count + lines[1].count + 2), as: UTF8.self), Data(lines[2]))
    }

    /// The payload of an opened backup; times and numbers out of range are refused with the file.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` when it is not a version 1 payload.
    package static func decodePayload(_ data: Data, path: String) throws(ServiceError) -> Payload {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let payload = try? decoder.decode(Payload.self, from: data), payload.version == 1 else {
            throw ServiceError(.invalidInput, "\(path) opened, but its contents are not a version 1 chappie backup. Nothing was changed")
        }
        let times = payload.accounts.flatMap { [$0.accessTokenExpiresAt, $0.lastRefreshAt, $0.createdAt] }.compactMap { $0 }
        guard times.allSatisfy({ WireNumber.date(unixSeconds: $0.timeIntervalSince1970) != nil }),
            payload.accounts.allSatisfy({ $0.reservePercent.map { (0...100).contains($0) } ?? true })
        else {
            throw ServiceError(.invalidInput, "\(path) holds a time or a reserve out of range. Nothing was changed")
        }
        return payload
    }

    private static func headerLines(_ header: Header) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return magic + "\n" + String(decoding: try encoder.encode(header), as: UTF8.self) + "\n"
    }
}

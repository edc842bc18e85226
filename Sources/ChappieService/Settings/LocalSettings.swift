import ChappieVault
public import Foundation

/// Settings of this machine only, kept in `local-settings.json` (0600) in the data directory, never
/// in the store: on a team pool, the alert targets and the certificate authorities to trust must
/// not be in the pool's database, or whoever can write the pool could run commands on every
/// machine, or read its traffic.
public struct LocalSettings: Sendable, Equatable, Codable {
    /// `alert-webhook`: URLs, each checked by ``AlertTargets/webhook(_:)``.
    public var alertWebhooks: [String]?
    /// `alert-command`: one command line (``CommandWords``).
    public var alertCommand: String?
    /// `alert-at`: thresholds, such as `80,95,100`.
    public var alertAt: String?
    /// `ca-file`: a PEM file of certificate authorities trusted besides the system's. A path on this
    /// machine, and whom it trusts: whoever writes a team pool must not choose it.
    public var caFile: String?

    private enum CodingKeys: String, CodingKey {
        case alertWebhooks = "alert-webhook", alertCommand = "alert-command", alertAt = "alert-at", caFile = "ca-file"
    }

    /// No settings.
    public init() {}

    /// The file in a data directory.
    static func file(in directory: URL) -> URL { directory.appendingPathComponent("local-settings.json") }

    /// The settings kept in a data directory (none when the file is absent).
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` when the file is a link, not chappie's, or not
    ///   settings: nothing of it is used then.
    public static func load(from directory: URL) throws(ServiceError) -> LocalSettings {
        let file = file(in: directory)
        let descriptor = open(file.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return LocalSettings() }
            throw ServiceError(.invalidInput, "\(file.path) cannot be read (\(String(cString: strerror(errno)))); a link there is not followed")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(), info.st_mode & 0o022 == 0 else {
            throw ServiceError(
                .invalidInput, "\(file.path) is not a settings file of yours (a regular file, yours, not writable by others); remove it")
        }
        guard info.st_size <= Self.largest else {
            throw ServiceError(.invalidInput, "\(file.path) is larger than settings are (\(Self.largest / 1024) KiB at most); remove it")
        }
        var data = Data(count: Int(info.st_size))
        let count = data.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count == Int(info.st_size) else { throw ServiceError(.invalidInput, "\(file.path) could not be read whole") }
        do {
            return try JSONDecoder().decode(LocalSettings.self, from: data)
        } catch {
            throw ServiceError(.invalidInput, "\(file.path) is not chappie's local settings; fix or remove it")
        }
    }

    /// Writes the settings (atomically, 0600).
    public func save(in directory: URL) throws(ServiceError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(self)
        } catch {
            throw ServiceError(.invalidInput, "the settings could not be written: \(error)")
        }
        guard data.count <= Self.largest else {
            throw ServiceError(
                .invalidInput, "the settings would be larger than \(Self.largest / 1024) KiB; use a shorter value (a script for a long command)")
        }
        do {
            try PrivateFile.write(SecretBytes(copying: data), to: Self.file(in: directory))
        } catch {
            throw ServiceError(.invalidInput, "cannot write \(Self.file(in: directory).path): \(error)")
        }
    }

    /// The largest settings file read, and written.
    static let largest = 65_536

    /// The alert targets these settings give, checked.
    public func alertTargets() throws(ServiceError) -> AlertTargets {
        var targets = AlertTargets()
        for text in alertWebhooks ?? [] { targets.webhooks.append(try AlertTargets.webhook(text)) }
        if let alertCommand { targets.command = try AlertTargets.command(alertCommand) }
        if let alertAt { targets.thresholds = try AlertTargets.thresholds(alertAt) }
        return targets
    }
}

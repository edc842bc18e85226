import ChappieVault
public import Foundation

/// Where the team pool's PostgreSQL database is and how to reach it, from a libpq-style URL:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE?sslmode=verify-full&sslrootcert=FILE`, or a
/// Unix socket directory as the host (`postgres://USER@/DATABASE?host=/run/postgresql`, or the
/// directory percent-encoded in the host's place).
///
/// The password comes from the URL, else the file `$CHAPPIE_STORE_PASSWORD_FILE` names, else the
/// systemd credential `chappie-store-password`. ``description`` never shows it.
public struct PoolAddress: Sendable, CustomStringConvertible {
    /// How TLS is used, as libpq's `sslmode` says.
    public enum TLSMode: String, Sendable, CaseIterable {
        /// No TLS.
        case disable
        /// TLS if the server offers it, without checking its certificate (libpq's `allow`/`prefer`).
        case prefer
        /// TLS always, without checking the certificate.
        case require
        /// TLS always, the certificate signed by a trusted authority (`sslrootcert`, else the system's).
        case verifyCA = "verify-ca"
        /// As `verify-ca`, and the certificate names the host: what the docs recommend.
        case verifyFull = "verify-full"
    }

    /// The user to connect as.
    public var user: String
    /// The database.
    public var database: String
    /// The host name or address, for TCP.
    public var host: String?
    /// The TCP port, or the number naming the Unix socket (`.s.PGSQL.PORT`).
    public var port: Int
    /// The Unix socket's directory, when the host is one.
    public var socketDirectory: String?
    /// How TLS is used (TCP only).
    public var tlsMode: TLSMode
    /// The authorities that may sign the server's certificate (`sslrootcert`), else the system's.
    public var rootCertificate: String?
    private var password: SecretBytes?

    /// Parses a URL.
    ///
    /// - Parameters:
    ///   - text: The URL.
    ///   - environment: For `CHAPPIE_STORE_PASSWORD_FILE` and `CREDENTIALS_DIRECTORY`.
    /// - Throws: ``StoreError`` `.io`-free configuration errors (`.corrupt` is never used): the code
    ///   is ``StoreError/Code/poolAddress`` and the message shows the URL without its password.
    public init(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(StoreError) {
        guard let components = URLComponents(string: text.trimmingCharacters(in: .whitespacesAndNewlines)),
            let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme.lowercased())
        else {
            throw StoreError(.poolAddress, "the store address is not a postgres:// URL (see team-pool.md in share/doc/chappie); nothing was opened")
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let known: Set = ["sslmode", "sslrootcert", "host", "port", "user", "dbname", "application_name", "connect_timeout"]
        if let unknown = query.keys.sorted().first(where: { !known.contains($0) }) {
            throw StoreError(
                .poolAddress, "the store address has an option chappie does not know: \(unknown) (known: \(known.sorted().joined(separator: ", ")))")
        }
        user = query["user"] ?? components.percentEncodedUser?.removingPercentEncoding ?? ""
        guard !user.isEmpty else { throw StoreError(.poolAddress, "the store address names no user (postgres://USER@HOST/DATABASE)") }
        let path = components.percentEncodedPath.removingPercentEncoding ?? ""
        database = query["dbname"] ?? String(path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw StoreError(.poolAddress, "the store address names no database (postgres://USER@HOST/DATABASE)")
        }
        let hostText = query["host"] ?? components.percentEncodedHost?.removingPercentEncoding ?? ""
        if hostText.hasPrefix("/") {
            socketDirectory = hostText
            host = nil
        } else {
            guard !hostText.isEmpty else { throw StoreError(.poolAddress, "the store address names no host (or ?host=/socket/directory)") }
            socketDirectory = nil
            host = hostText.hasPrefix("[") && hostText.hasSuffix("]") ? String(hostText.dropFirst().dropLast()) : hostText
        }
        if let text = query["port"] {
            guard let number = Int(text), (1...65535).contains(number) else {
                throw StoreError(.poolAddress, "the store address's port is not a port number")
            }
            port = number
        } else {
            port = components.port ?? 5432
        }
        switch query["sslmode"] ?? "prefer" {
        case "allow", "prefer": tlsMode = .prefer
        case let mode:
            guard let parsed = TLSMode(rawValue: mode) else {
                throw StoreError(.poolAddress, "sslmode=\(mode) is not one of disable, allow, prefer, require, verify-ca, verify-full")
            }
            tlsMode = parsed
        }
        rootCertificate = query["sslrootcert"]
        if let given = components.percentEncodedPassword?.removingPercentEncoding, !given.isEmpty {
            password = SecretBytes(utf8: given)
        } else if let file = environment["CHAPPIE_STORE_PASSWORD_FILE"], !file.isEmpty {
            password = try Self.readPassword(URL(fileURLWithPath: file), what: "database password file ($CHAPPIE_STORE_PASSWORD_FILE)")
        } else if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
            let credential = URL(fileURLWithPath: directory).appendingPathComponent("chappie-store-password")
            if FileManager.default.fileExists(atPath: credential.path) {
                password = try Self.readPassword(credential, what: "systemd credential chappie-store-password")
            }
        }
    }

    private static func readPassword(_ file: URL, what: String) throws(StoreError) -> SecretBytes {
        do {
            return try PrivateSecretFile.firstLine(of: file, what: what)
        } catch {
            throw StoreError(.poolAddress, error.message)
        }
    }

    /// The address without its password: `postgres://USER@HOST:PORT/DATABASE` (with the socket's
    /// directory for a socket, and the TLS mode).
    public var description: String {
        let place = socketDirectory.map { "\(user)@\($0)" } ?? "\(user)@\(host ?? ""):\(port)"
        return "postgres://\(place)/\(database)" + (socketDirectory == nil ? " (sslmode=\(tlsMode.rawValue))" : "")
    }

    /// The password as text, for the PostgreSQL client (`ChappiePool`).
    package var passwordText: String? {
        password.map { $0.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
    }
}

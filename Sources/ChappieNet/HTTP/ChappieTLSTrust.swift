public import Foundation
import Synchronization

/// The certificate authorities chappie's HTTPS and `wss` connections trust: the system's, or the
/// ones `SSL_CERT_FILE` names instead (as OpenSSL and the Codex CLI read it), plus any a user adds
/// (`--ca-file`, for a company proxy that signs what it forwards). Neither libcurl nor NIOSSL reads
/// `SSL_CERT_FILE` itself, so chappie does, and gives both clients the same answer.
///
/// Verification is never turned off: a certificate no trusted authority signed, an expired one, or
/// one for another host fails the connection.
public struct ChappieTLSTrust: Sendable, Hashable {
    /// A PEM file of authorities used instead of the system's (`SSL_CERT_FILE`); `nil` for the system's.
    public var rootsFile: String?
    /// PEM files of authorities trusted as well as the roots (`--ca-file`, `CHAPPIE_CA_FILE`).
    public var additionalFiles: [String]

    /// Trust with these files; the defaults trust what the system does.
    public init(rootsFile: String? = nil, additionalFiles: [String] = []) {
        self.rootsFile = rootsFile
        self.additionalFiles = additionalFiles
    }

    /// What the environment asks for: `SSL_CERT_FILE` replaces the system's authorities and
    /// `CHAPPIE_CA_FILE` adds to them (empty values count as unset).
    public init(environment: [String: String]) {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        self.init(rootsFile: value("SSL_CERT_FILE"), additionalFiles: value("CHAPPIE_CA_FILE").map { [$0] } ?? [])
    }

    /// This process's environment's trust, read when a configuration is made: the default of
    /// every client configuration (the command line sets `CHAPPIE_CA_FILE` from `--ca-file`).
    public static var environment: ChappieTLSTrust { ChappieTLSTrust(environment: ProcessInfo.processInfo.environment) }

    /// Whether this is the system's trust, unchanged.
    public var isSystem: Bool { rootsFile == nil && additionalFiles.isEmpty }

    /// The PEM text of the roots and the additions together, for a client that takes one bundle;
    /// `systemBundle` is read when no roots file replaces the system's. Read once per trust and
    /// kept, as each file is read at most once a process.
    ///
    /// - Throws: ``ChappieHTTPClientError`` `.tlsFailed` naming a file that cannot be read or holds
    ///   no certificate.
    func bundle(systemBundle: String?) throws(ChappieHTTPClientError) -> Data {
        var bundle = Data()
        for file in [rootsFile ?? systemBundle].compactMap({ $0 }) + additionalFiles {
            bundle.append(try Self.certificates(in: file))
            bundle.append(0x0A)
        }
        return bundle
    }

    /// A PEM file's contents, checked to hold a certificate.
    static func certificates(in file: String) throws(ChappieHTTPClientError) -> Data {
        if let kept = read.withLock({ $0[file] }) { return kept }
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ChappieHTTPClientError(
                code: .tlsFailed, message: "the certificate file \(file) cannot be read: check the path given with --ca-file or SSL_CERT_FILE")
        }
        guard String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw ChappieHTTPClientError(
                code: .tlsFailed, message: "the certificate file \(file) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        read.withLock { $0[file] = data }
        return data
    }

    /// Files read so far, by path.
    private static let read = Mutex<[String: Data]>([:])
}

public import Foundation

/// The certificate authorities chappie's HTTPS and `wss` connections trust: the system's, or the
/// ones `SSL_CERT_FILE` names instead (as OpenSSL and the Codex CLI read it), plus any a user adds
/// (`--ca-file`, `CHAPPIE_CA_FILE` or the `ca-file` setting, for a company proxy that signs what it
/// forwards). Neither libcurl nor NIOSSL reads `SSL_CERT_FILE` itself, so chappie does, and gives
/// both clients the same answer.
///
/// Verification is never turned off: a certificate no trusted authority signed, an expired one, or
/// one for another host fails the connection.
public struct ChappieTLSTrust: Sendable, Hashable {
    /// A PEM file of authorities used instead of the system's (`SSL_CERT_FILE`); `nil` for the system's.
    public var rootsFile: String?
    /// PEM files of authorities trusted as well as the roots.
    public var additionalFiles: [String]

    /// Trust with these files; the defaults trust what the system does.
    public init(rootsFile: String? = nil, additionalFiles: [String] = []) {
        self.rootsFile = rootsFile
        self.additionalFiles = additionalFiles
    }

    /// What an environment asks for: `SSL_CERT_FILE` replaces the system's authorities and
    /// `CHAPPIE_CA_FILE` adds to them (empty values count as unset).
    public init(environment: [String: String]) {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        self.init(rootsFile: value("SSL_CERT_FILE"), additionalFiles: value("CHAPPIE_CA_FILE").map { [$0] } ?? [])
    }

    /// This process's environment's trust: the default of every configuration that has one.
    public static var environment: ChappieTLSTrust { ChappieTLSTrust(environment: ProcessInfo.processInfo.environment) }

    /// Whether this is the system's trust, unchanged.
    public var isSystem: Bool { rootsFile == nil && additionalFiles.isEmpty }

    /// How the network layer's descriptions of its two trust failures start: a certificate that
    /// did not verify, and a certificate file that cannot be used. No server text comes before them.
    package static let failurePrefixes = ["certificate rejected: ", "certificate file unusable: "]

    /// Whether a network failure's description is one of the trust failures: retrying does not
    /// help, trusting the right authority (or fixing the file) does.
    package static func isTrustFailure(_ description: String) -> Bool {
        failurePrefixes.contains { description.hasPrefix($0) }
    }
}

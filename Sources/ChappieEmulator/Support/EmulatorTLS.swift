import Crypto
public import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The certificates the emulator serves TLS with: a certificate authority made at start-up and a
/// server certificate it signs for 127.0.0.1, ::1 and localhost.
///
/// Made in memory, never by running `openssl`: clients that must see an `https` origin (the Codex
/// CLI's workspace discovery, docs/emulator.md) are given the authority's PEM to trust, and nothing
/// of it outlives the process except what `--tls-ca-out` writes.
public struct EmulatorTLS: Sendable {
    /// The authority's certificate, PEM: what a client adds to its trusted roots.
    public let authorityPEM: String
    /// The server certificate, PEM.
    public let certificatePEM: String
    /// The server certificate's private key, PEM.
    let privateKeyPEM: String

    /// Makes a new authority and server certificate, valid from an hour before `now`.
    ///
    /// - Parameters:
    ///   - now: The start of the validity, less an hour for clocks that differ.
    ///   - lifetime: How long the server certificate is valid; a negative one makes an expired
    ///     certificate, for tests of refusal.
    ///   - names: The host names it is for.
    ///   - loopback: Whether it is for 127.0.0.1 and ::1 too; without, it names another host than
    ///     the one a client connects to, for tests of refusal.
    public static func generate(
        now: Date = Date(), lifetime: TimeInterval = 7 * 86400, names: [String] = ["localhost"], loopback: Bool = true
    ) throws -> EmulatorTLS {
        let authorityKey = P256.Signing.PrivateKey()
        let authorityName = try DistinguishedName {
            OrganizationName("chappie-emulator")
            CommonName("chappie-emulator local authority")
        }
        let authorityPublicKey = Certificate.PublicKey(authorityKey.publicKey)
        let authorityKeyID = SubjectKeyIdentifier(hash: authorityPublicKey)
        let authority = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: authorityPublicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(max(lifetime, 0) + 86400),
            issuer: authorityName, subject: authorityName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                authorityKeyID
            },
            issuerPrivateKey: Certificate.PrivateKey(authorityKey))

        let serverKey = P256.Signing.PrivateKey()
        let serverPublicKey = Certificate.PublicKey(serverKey.publicKey)
        let addresses: [GeneralName] =
            loopback
            ? [
                .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                .ipAddress(ASN1OctetString(contentBytes: ArraySlice([UInt8](repeating: 0, count: 15) + [1]))),
            ] : []
        let server = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: serverPublicKey,
            notValidBefore: now.addingTimeInterval(lifetime < 0 ? lifetime - 3600 : -3600), notValidAfter: now.addingTimeInterval(lifetime),
            issuer: authorityName, subject: try DistinguishedName { CommonName(names.first ?? "localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names.map { GeneralName.dnsName($0) } + addresses)
                SubjectKeyIdentifier(hash: serverPublicKey)
                AuthorityKeyIdentifier(keyIdentifier: authorityKeyID.keyIdentifier)
            },
            issuerPrivateKey: Certificate.PrivateKey(authorityKey))
        return EmulatorTLS(
            authorityPEM: try authority.serializeAsPEM().pemString, certificatePEM: try server.serializeAsPEM().pemString,
            privateKeyPEM: serverKey.pemRepresentation)
    }

    /// The server side of TLS with this certificate, HTTP/1.1 only (ALPN), as the backend offers
    /// it to WebSocket clients.
    func serverContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)))
        configuration.applicationProtocols = ["http/1.1"]
        return try NIOSSLContext(configuration: configuration)
    }
}

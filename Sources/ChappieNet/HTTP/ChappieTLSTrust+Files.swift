import ChappieCore
import ChappieSystem
import Foundation
import Synchronization

extension ChappieTLSTrust {
    /// The PEM text of the roots and the additions together, for a client that takes one bundle;
    /// `systemBundle` is read when no roots file replaces the system's. Made once per trust and
    /// bundle, and kept for the process.
    ///
    /// - Throws: ``ChappieHTTPClientError`` `.untrustedFile` naming a file that cannot be read or
    ///   holds no certificate.
    func bundle(systemBundle: String?) throws(ChappieHTTPClientError) -> Data {
        let key = BundleKey(trust: self, systemBundle: systemBundle)
        if let kept = Self.bundles.withLock({ $0[key] }) { return kept }
        var bundle = Data()
        for file in [rootsFile ?? systemBundle].compactMap({ $0 }) + additionalFiles {
            bundle.append(try Self.certificates(in: file))
            bundle.append(0x0A)
        }
        Self.bundles.withLock { $0[key] = bundle }
        return bundle
    }

    /// Checks every file this trust names: each must be a readable PEM file with a certificate,
    /// which no other user can change.
    package func checkFiles() throws(ChappieHTTPClientError) {
        for file in [rootsFile].compactMap({ $0 }) + additionalFiles { _ = try Self.certificates(in: file) }
    }

    /// A PEM file's contents, checked to hold a certificate; read at most once a process.
    static func certificates(in file: String) throws(ChappieHTTPClientError) -> Data {
        if let kept = files.withLock({ $0[file] }) { return kept }
        // A regular file of sane size only: reading a FIFO or a device would wait or never end.
        let resolved = URL(fileURLWithPath: file).resolvingSymlinksInPath().path
        let attributes = try? FileManager.default.attributesOfItem(atPath: resolved)
        guard attributes?[.type] as? FileAttributeType == .typeRegular, (attributes?[.size] as? Int ?? 0) <= 16 << 20,
            let data = FileManager.default.contents(atPath: resolved)
        else {
            throw ChappieHTTPClientError(
                code: .untrustedFile,
                message: "the certificate file \(file) cannot be read: check --ca-file, CHAPPIE_CA_FILE, the ca-file setting or SSL_CERT_FILE")
        }
        // Whoever can change the file, or a directory on the way to it, chooses whom chappie trusts.
        if let (place, problem) = PathOwnership.firstProblem(onTheWayTo: file) {
            throw ChappieHTTPClientError(
                code: .untrustedFile,
                message: "the certificate file \(file) is not trusted: \(place) \(problem), so another user could choose whom chappie trusts; "
                    + "fix it (\(problem.fix(at: place))) or use a file only you can change")
        }
        guard String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw ChappieHTTPClientError(
                code: .untrustedFile, message: "the certificate file \(file) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        files.withLock { $0[file] = data }
        return data
    }

    private struct BundleKey: Hashable {
        let trust: ChappieTLSTrust
        let systemBundle: String?
    }

    /// Files read so far, by path, and bundles made.
    private static let files = Mutex<[String: Data]>([:])
    private static let bundles = Mutex<[BundleKey: Data]>([:])
}

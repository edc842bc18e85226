import ChappieStore
import Foundation
import NIOSSL
import PostgresNIO

/// A pool address as PostgresNIO's configurations: the pool's connections and a refresh lock's own.
extension PoolAddress {
    /// The configuration of PostgresNIO's connection pool. The server cancels any statement that
    /// runs longer than `statementTimeout` (SQLSTATE 57014, rolled back, so nothing is half done):
    /// the client then never has to abandon a write that might still commit.
    func clientConfiguration(statementTimeout: Duration) throws(StoreError) -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socketDirectory {
            configuration = PostgresClient.Configuration(
                unixSocketPath: socketDirectory + "/.s.PGSQL.\(port)", username: user, password: passwordText, database: database)
        } else {
            let tls: PostgresClient.Configuration.TLS =
                switch try tlsSettings() {
                case nil: .disable
                case (let settings, true)?: .require(settings)
                case (let settings, false)?: .prefer(settings)
                }
            configuration = PostgresClient.Configuration(
                host: host ?? "", port: port, username: user, password: passwordText, database: database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(10)
        configuration.options.additionalStartupParameters = [
            ("application_name", "chappie"), ("statement_timeout", String(Int64(statementTimeout / .milliseconds(1)))),
        ]
        return configuration
    }

    /// The configuration of one connection of its own (a refresh lock's).
    func connectionConfiguration() throws(StoreError) -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if let socketDirectory {
            configuration = PostgresConnection.Configuration(
                unixSocketPath: socketDirectory + "/.s.PGSQL.\(port)", username: user, password: passwordText, database: database)
        } else {
            var tls = PostgresConnection.Configuration.TLS.disable
            if let (settings, required) = try tlsSettings() {
                do {
                    let context = try NIOSSLContext(configuration: settings)
                    tls = required ? .require(context) : .prefer(context)
                } catch {
                    throw StoreError(.poolAddress, "the TLS settings of the pool \(self) cannot be used (\(error))")
                }
            }
            configuration = PostgresConnection.Configuration(
                host: host ?? "", port: port, username: user, password: passwordText, database: database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(10)
        configuration.options.additionalStartupParameters = [("application_name", "chappie")]
        return configuration
    }

    /// The TLS settings and whether TLS is required; `nil` for no TLS.
    private func tlsSettings() throws(StoreError) -> (TLSConfiguration, required: Bool)? {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate {
            guard FileManager.default.isReadableFile(atPath: rootCertificate) else {
                throw StoreError(.poolAddress, "sslrootcert \(rootCertificate) cannot be read")
            }
            tls.trustRoots = .file(rootCertificate)
        }
        switch tlsMode {
        case .disable:
            return nil
        case .prefer:
            tls.certificateVerification = .none
            return (tls, false)
        case .require:
            tls.certificateVerification = .none
            return (tls, true)
        case .verifyCA:
            tls.certificateVerification = .noHostnameVerification
            return (tls, true)
        case .verifyFull:
            tls.certificateVerification = .fullVerification
            return (tls, true)
        }
    }
}

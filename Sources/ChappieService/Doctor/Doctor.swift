public import Chappie
import ChappieCore
public import ChappieNet
public import ChappieStore
import ChappiePool
import ChappieVault
import Foundation
public import Logging

/// Checks the machine chappie runs on: libraries, data directory, and the two services.
///
/// ```swift
/// let report = await Doctor(endpoints: ChappieEndpoints(), location: .resolve(home: nil)).run()
/// print(report.isHealthy)
/// ```
public struct Doctor: Sendable {
    /// The services to probe.
    public var endpoints: ChappieEndpoints
    /// The data directory to inspect.
    public var location: StoreLocation
    /// The store options, which may select a team pool to check.
    public var storeOptions: StoreOptions
    /// How long each probe may take in all. Default: 10 seconds.
    public var timeout: Duration
    private let client: ChappieHTTPClient

    /// Creates a doctor.
    ///
    /// - Parameters:
    ///   - endpoints: The services to probe.
    ///   - location: The data directory to inspect (never created or changed).
    ///   - timeout: How long each probe may take in all.
    ///   - client: The HTTP client; a new one by default.
    public init(
        endpoints: ChappieEndpoints, location: StoreLocation, timeout: Duration = .seconds(10), client: ChappieHTTPClient? = nil,
        storeOptions: StoreOptions? = nil
    ) {
        self.endpoints = endpoints
        self.location = location
        self.storeOptions = storeOptions ?? StoreOptions(home: location.directory.path)
        self.timeout = timeout
        self.client = client ?? endpoints.httpClient(ChappieHTTPClientConfiguration(connectTimeout: .seconds(5)))
    }

    /// A check of what these options name: their services and data directory.
    public init(options: ServiceOptions, timeout: Duration = .seconds(10)) {
        self.init(endpoints: options.endpoints, location: options.location, timeout: timeout, storeOptions: options.storeOptions)
    }

    /// Runs every check; the issuer and the backend are probed at the same time.
    public func run(logger: Logger = Logger(label: "chappie.doctor")) async -> DoctorReport {
        async let issuer = probe(
            name: "issuer", url: endpoints.discoveryURL, logger: logger,
            expect: { response in
                guard response.status == 200 else { return "answered \(response.status), expected 200 with the OpenID configuration" }
                let document = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
                return document?["token_endpoint"] is String ? nil : "answered 200, but not with an OpenID configuration"
            })
        async let backend = probe(
            name: "backend", url: endpoints.usageURL, logger: logger,
            expect: { response in
                // Without credentials the usage endpoint must refuse: 401 or 403 shows it is there.
                [401, 403].contains(response.status) ? nil : "answered \(response.status) without credentials, expected 401 or 403"
            })
        async let pool = pool()
        let permissions = DirectoryPermissions.inspect(location.directory)
        let libraries = [
            DoctorReport.Library(name: "libsodium", version: Sodium.version, detail: nil, problem: nil),
            DoctorReport.Library(
                name: "libcurl", version: Curl.version ?? "missing",
                detail: Curl.version == nil ? nil : "\(Curl.tlsVersion), HTTP/2 \(Curl.supportsHTTP2 ? "yes" : "no")",
                problem: Curl.unavailableReason),
            DoctorReport.Library(name: "SQLite", version: SQLiteLibrary.version, detail: nil, problem: nil),
        ]
        return DoctorReport(
            version: ChappieVersion.current,
            libraries: libraries,
            dataDirectory: DoctorReport.DataDirectory(
                path: location.directory.path, exists: permissions.exists,
                mode: permissions.mode.map { String($0, radix: 8) }, problem: permissions.problem),
            endpoints: await [issuer, backend],
            pool: await pool)
    }

    /// The team pool's check: reached, its version, its schema (nothing is migrated or changed).
    private func pool() async -> DoctorReport.Pool? {
        let known = StoreSchema.postgresMigrations.count
        let address: PoolAddress
        do {
            guard let selected = try storeOptions.poolAddress() else { return nil }
            address = selected
        } catch {
            return DoctorReport.Pool(
                address: "(unusable)", machine: storeOptions.machineName, reachable: false, migrationsKnown: known, problem: error.message)
        }
        var report = DoctorReport.Pool(address: address.description, machine: storeOptions.machineName, reachable: false, migrationsKnown: known)
        do {
            let inspection = try await PoolDatabase.inspect(address, deadline: timeout)
            report.reachable = true
            report.serverVersion = inspection.serverVersion
            report.migrationsApplied = inspection.applied.count
            if let newer = inspection.newer {
                report.problem = "the pool was migrated by a newer chappie (\(newer)); upgrade chappie on this machine"
            } else if (Int(inspection.serverVersion.prefix { $0.isNumber }) ?? 0) < 13 {
                report.problem = "PostgreSQL \(inspection.serverVersion) is older than 13, which the pool needs"
            }
        } catch {
            report.problem = error.message
        }
        return report
    }

    private func probe(
        name: String, url: URL, logger: Logger, expect: @Sendable (ChappieHTTPResponse) -> String?
    ) async -> DoctorReport.Endpoint {
        var request = ChappieHTTPRequest(url: url, headers: ["Accept": "application/json"])
        request.totalTimeout = timeout
        let clock = ContinuousClock()
        let start = clock.now
        let outcome: Result<ChappieHTTPResponse, any Error>
        do {
            outcome = .success(try await client.execute(request))
        } catch {
            outcome = .failure(error)
        }
        let milliseconds = Int((clock.now - start) / .milliseconds(1))
        switch outcome {
        case .success(let response):
            logger.debug("probe answered", metadata: ["endpoint": "\(name)", "http.status": "\(response.status)"])
            return DoctorReport.Endpoint(
                name: name, url: url.absoluteString, reachable: true, status: response.status,
                milliseconds: milliseconds, problem: expect(response))
        case .failure(let error):
            logger.debug("probe failed", metadata: ["endpoint": "\(name)", "error": "\(error)"])
            return DoctorReport.Endpoint(
                name: name, url: url.absoluteString, reachable: false, status: nil,
                milliseconds: milliseconds, problem: "\(error)")
        }
    }
}

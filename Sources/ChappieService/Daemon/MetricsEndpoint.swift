import ChappieNet
package import ChappieVault
public import Foundation
import Logging
import Synchronization

/// Where the daemon serves `/metrics` and its dashboard (`--http HOST:PORT`, also spelled
/// `--metrics-listen`), and the file of the bearer secret a client must send (`--http-token-file`).
/// A loopback address needs no secret; any other address is refused without one, so that nothing on
/// the network reads the accounts' state.
public struct MetricsListener: Sendable, Equatable {
    /// The address to listen on, such as `127.0.0.1` or `::1`.
    public var host: String
    /// The port (0 picks a free one).
    public var port: Int
    /// The file holding the bearer secret (its first line), mode 0600.
    public var tokenFile: URL?
    /// The option that named the address, for messages: `--http` or `--metrics-listen`.
    public var option: String

    /// Parses `HOST:PORT` (`[::1]:9464` for IPv6; `:PORT` or a bare port is 127.0.0.1).
    ///
    /// - Parameter option: The option the address came from, named in errors.
    /// - Throws: ``ServiceError`` `.invalidInput` for a malformed address, and for one that is not
    ///   loopback when no `tokenFile` is given.
    public init(address: String, tokenFile: URL?, option: String = "--http") throws(ServiceError) {
        var host = "127.0.0.1", portText = address
        if let colon = address.lastIndex(of: ":") {
            host = String(address[..<colon])
            portText = String(address[address.index(after: colon)...])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            if host.isEmpty { host = "127.0.0.1" }
        }
        guard let port = Int(portText), (0...65535).contains(port), !host.contains(where: { $0.isWhitespace || $0 == "/" }) else {
            throw ServiceError(.invalidInput, "\(option) wants HOST:PORT, such as 127.0.0.1:9464 (got \"\(address.prefix(80))\")")
        }
        self.host = host
        self.port = port
        self.tokenFile = tokenFile
        self.option = option
        guard isLoopback || tokenFile != nil else {
            throw ServiceError(
                .invalidInput,
                "\(option) \(address) is not a loopback address: give --http-token-file FILE (0600) with a bearer secret clients must send")
        }
    }

    /// Whether only this machine can connect: a loopback address (`127.x.x.x`, `::1`) or
    /// `localhost`. Other names (`*.localhost` among them) could resolve anywhere, so they need the
    /// secret as any other address does.
    public var isLoopback: Bool { ChappieHTTPClient.isLoopbackAddress(host: host) }

    /// `HOST:PORT` with an IPv6 host in brackets, for a URL or a log line.
    public func address(port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// The daemon's HTTP listener: `GET /metrics` in Prometheus' text format, and the dashboard
/// (`GET /`, `GET /api/accounts`), nothing else. With a
/// bearer secret, every request must carry `Authorization: Bearer SECRET`; without one (loopback
/// only), the `Host` must name loopback too, so that a web page in a local browser cannot read it
/// through a name it rebinds to 127.0.0.1.
package final class MetricsEndpoint: Sendable {
    /// The listener, once started.
    let server: LocalHTTPServer

    private init(server: LocalHTTPServer) {
        self.server = server
    }

    /// When a refused request was last logged: one warning a minute at most, however many come.
    private static let lastRefusalLogged = Mutex<ContinuousClock.Instant?>(nil)

    /// Reads the secret (if any) and starts listening.
    ///
    /// - Throws: ``ServiceError`` `.configuration` for a secret file that is unreadable, readable by
    ///   others, or shorter than 16 characters; `.invalidInput` when the address cannot be listened on.
    static func start(_ listener: MetricsListener, metrics: DaemonMetrics, dashboard: Dashboard, logger: Logger) async throws(ServiceError)
        -> MetricsEndpoint
    {
        var secret: SecretBytes?
        if let file = listener.tokenFile {
            // Trimmed as Prometheus trims its credentials_file, so both sides agree on the secret.
            let read: SecretBytes
            do {
                read = try PrivateSecretFile.firstLine(of: file, what: "token file", trimmingWhitespace: true)
            } catch {
                throw ServiceError(.configuration, error.message)
            }
            guard read.count >= 16 else {
                throw ServiceError(.configuration, "the token file \(file.path) must hold a secret of at least 16 bytes on its first line")
            }
            secret = read
        }
        let expected = secret
        do {
            let server = try await LocalHTTPServer.listen(host: listener.host, ports: [listener.port]) { request in
                await answer(request, metrics: metrics, dashboard: dashboard, expected: expected, logger: logger)
            }
            return MetricsEndpoint(server: server)
        } catch {
            throw ServiceError(.invalidInput, "\(listener.option): \(error.message)")
        }
    }

    /// Stops listening.
    func close() async {
        await server.close()
    }

    private static func answer(
        _ request: LocalHTTPServer.Request, metrics: DaemonMetrics, dashboard: Dashboard, expected: SecretBytes?, logger: Logger
    ) async -> LocalHTTPServer.Response {
        if let expected {
            guard let given = presentedSecret(request.header("Authorization") ?? ""), given.constantTimeEquals(expected) else {
                logRefusal("no valid bearer secret", request, logger: logger)
                // Basic too, so that a browser asks for the secret (as the password) and sends it
                // with the dashboard's own requests.
                return LocalHTTPServer.Response(
                    status: 401, text: "a bearer secret is needed (Authorization: Bearer, from --http-token-file)\n",
                    headers: [
                        (name: "WWW-Authenticate", value: "Bearer realm=\"chappie\""), (name: "WWW-Authenticate", value: "Basic realm=\"chappie\""),
                    ])
            }
        } else {
            guard let host = request.header("Host"), ChappieHTTPClient.isLoopbackAddress(host: hostName(host)) else {
                logRefusal("the Host header does not name loopback", request, logger: logger)
                return LocalHTTPServer.Response(status: 403, text: "only a loopback Host is answered without a bearer secret\n")
            }
        }
        guard ["/metrics", "/", "/api/accounts"].contains(request.path) else {
            return LocalHTTPServer.Response(status: 404, text: "not found: chappie serves /, /api/accounts and /metrics\n")
        }
        // Read-only: nothing here changes state, and only GET is answered.
        guard request.method == "GET" else {
            return LocalHTTPServer.Response(status: 405, text: "only GET is answered here\n", headers: [(name: "Allow", value: "GET")])
        }
        // Every answer is also no-store, nosniff and no-referrer (LocalHTTPServer); the page is under its own policy.
        do {
            switch request.path {
            case "/":
                return LocalHTTPServer.Response(
                    status: 200, contentType: "text/html; charset=utf-8", text: try await dashboard.page(),
                    headers: [(name: "Content-Security-Policy", value: Dashboard.contentSecurityPolicy)])
            case "/api/accounts":
                return LocalHTTPServer.Response(status: 200, contentType: "application/json", text: try await dashboard.json())
            default:
                return LocalHTTPServer.Response(
                    status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", text: try await metrics.exposition())
            }
        } catch {
            logger.warning("the store could not be read for an HTTP request", metadata: ["path": "\(request.path)", "error": "\(error)"])
            return LocalHTTPServer.Response(status: 503, text: "the store could not be read; see the daemon's log\n")
        }
    }

    /// The secret an `Authorization` header presents: `Bearer SECRET`, or `Basic` with the secret as
    /// the password (any user name), which is how a browser sends it.
    package static func presentedSecret(_ header: String) -> SecretBytes? {
        let lowered = header.lowercased()
        if lowered.hasPrefix("bearer ") { return SecretBytes(utf8: String(header.dropFirst(7).drop { $0 == " " })) }
        guard lowered.hasPrefix("basic "),
            let decoded = Data(base64Encoded: String(header.dropFirst(6).drop { $0 == " " })),
            let colon = decoded.firstIndex(of: UInt8(ascii: ":"))
        else { return nil }
        return SecretBytes(copying: decoded[decoded.index(after: colon)...])
    }

    /// The host of a `Host` header, without its port (`[::1]:9464` → `::1`).
    package static func hostName(_ header: String) -> String {
        if header.hasPrefix("["), let end = header.firstIndex(of: "]") { return String(header[header.index(after: header.startIndex)..<end]) }
        return String(header.prefix { $0 != ":" })
    }

    /// Logs a refused request, at most once a minute.
    private static func logRefusal(_ reason: String, _ request: LocalHTTPServer.Request, logger: Logger) {
        let now = ContinuousClock.now
        let due = lastRefusalLogged.withLock { last in
            guard last.map({ now - $0 >= .seconds(60) }) ?? true else { return false }
            last = now
            return true
        }
        if due {
            logger.warning(
                "metrics request refused (further refusals this minute are not logged)",
                metadata: [
                    "reason": "\(reason)", "path": "\(request.path.prefix(64))",
                ])
        }
    }
}

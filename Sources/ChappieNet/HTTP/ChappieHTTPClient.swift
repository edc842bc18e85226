import ChappieCore
import Foundation
import Logging
import Synchronization

/// An async HTTP/1.1 and HTTP/2 client on libcurl.
///
/// All requests of one client share one libcurl multi handle, so connections are reused and HTTP/2
/// streams multiplexed. Requests are `async`; cancelling the calling task (or dropping a streaming
/// body) stops the transfer at once. Proxies follow libcurl's environment rules (`HTTPS_PROXY`,
/// `NO_PROXY`, …) unless the configuration names one.
///
/// ```swift
/// let client = ChappieHTTPClient()
/// let response = try await client.execute(ChappieHTTPRequest(url: URL(string: "https://example.com/")!))
/// print(response.status)
/// ```
///
/// - Warning: An `Authorization` header (or a body that carries a credential, see
///   ``ChappieHTTPRequest/bodyCarriesCredentials``) is only sent over `https`, or over `http` to a loopback
///   address; anything else fails with ``ChappieHTTPClientError/Code/insecureAuthorization``.
public final class ChappieHTTPClient: Sendable {
    /// The configuration the client was made with.
    public let configuration: ChappieHTTPClientConfiguration
    /// The connection pool and its thread, made on the first request (which loads libcurl).
    private let pool = Mutex<CurlMultiLoop?>(nil)
    /// Requests by host and path, at debug level (`--verbose`): never a query, header or body.
    private static let logger = Logger(label: "chappie.http")

    /// Creates a client with its own connection pool. Nothing is loaded or started until the first request.
    public init(configuration: ChappieHTTPClientConfiguration = ChappieHTTPClientConfiguration()) {
        self.configuration = configuration
    }

    deinit {
        pool.withLock { $0?.release() }
    }

    /// The pool, made (and libcurl loaded) on first use.
    private func loop() throws(ChappieHTTPClientError) -> CurlMultiLoop {
        try pool.withLock { (loop: inout CurlMultiLoop?) throws(ChappieHTTPClientError) -> CurlMultiLoop in
            if let loop { return loop }
            let made = try CurlMultiLoop()
            loop = made
            return made
        }
    }

    /// Sends a request and reads the whole response body.
    ///
    /// - Returns: The response, whatever its status.
    /// - Throws: ``ChappieHTTPClientError`` when no complete response arrived, or `CancellationError`.
    public func execute(_ request: ChappieHTTPRequest) async throws -> ChappieHTTPResponse {
        let response = try await stream(request)
        var body = Data()
        for try await chunk in response.body {
            body.append(chunk)
            if body.count > configuration.maximumBufferedBodySize {
                throw ChappieHTTPClientError(
                    code: .responseTooLarge,
                    message: "\(request.redactedTarget): body over \(configuration.maximumBufferedBodySize) bytes")
            }
        }
        return ChappieHTTPResponse(status: response.status, headers: response.headers, body: body)
    }

    /// Sends a request and returns as soon as the response head arrives; the body follows as a stream.
    ///
    /// - Returns: The status, headers and body stream of the final response.
    /// - Throws: ``ChappieHTTPClientError`` when no response head arrived, or `CancellationError`.
    public func stream(_ request: ChappieHTTPRequest) async throws -> ChappieHTTPStreamingResponse {
        try Self.validate(request)
        try Task.checkCancellation()
        let loop = try self.loop()
        let transfer = try CurlTransfer(request: request, configuration: configuration)
        transfer.cancelWhenBodyIsDropped(on: loop)
        Self.logger.debug("request", metadata: ["http": "\(Self.target(request))"])
        let started = ContinuousClock.now
        let head: CurlTransfer.Head
        do {
            head = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    transfer.headContinuation = continuation
                    loop.add(transfer)
                }
            } onCancel: {
                loop.cancel(transfer)
            }
        } catch {
            Self.logger.debug("request failed", metadata: ["http": "\(Self.target(request))", "error": "\(error)"])
            throw error
        }
        Self.logger.debug(
            "response",
            metadata: [
                "http": "\(Self.target(request))", "status": "\(head.status)", "ms": "\((ContinuousClock.now - started).wholeMilliseconds)",
            ])
        return ChappieHTTPStreamingResponse(status: head.status, headers: head.headers, body: ChappieHTTPBodyStream(transfer.takeBody()))
    }

    /// A request for a log line: method, scheme, host and path (built only when the line is written).
    private static func target(_ request: ChappieHTTPRequest) -> String {
        "\(request.method.rawValue) \(request.url.scheme ?? "")://\(request.redactedTarget)"
    }

    /// Refuses requests that must not be sent as they are.
    static func validate(_ request: ChappieHTTPRequest) throws {
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = request.url.host, !host.isEmpty
        else {
            throw ChappieHTTPClientError(code: .invalidURL, message: "not an absolute http(s) URL: \(request.redactedTarget)")
        }
        if scheme == "http" && (request.headers.contains("Authorization") || request.bodyCarriesCredentials) && !isLoopback(host: host) {
            throw ChappieHTTPClientError(
                code: .insecureAuthorization,
                message: "refusing to send credentials over plain http to \(host); use https (only loopback may use http)")
        }
    }

    /// Whether a host name or address is this machine's loopback (`localhost` and `*.localhost`,
    /// `127.0.0.0/8`, `::1`).
    public static func isLoopback(host: String) -> Bool {
        isLoopbackAddress(host: host) || host.lowercased().hasSuffix(".localhost")
    }

    /// Whether a host is a loopback address or `localhost` itself: what a listener may bind to
    /// without a secret (another name, `*.localhost` included, could resolve anywhere).
    public static func isLoopbackAddress(host: String) -> Bool {
        var host = host.lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        // Decimal octets only: libcurl reads `08` as no number and looks the whole name up in the DNS.
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil && ($0 == "0" || !$0.hasPrefix("0")) }
    }
}

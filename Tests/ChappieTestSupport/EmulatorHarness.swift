import ChappieCore
public import ChappieEmulator
public import ChappieNet
public import Foundation

/// Runs an in-process emulator on an ephemeral loopback port for the length of `body`.
///
/// ```swift
/// try await withEmulator { emulator in
///     let response = try await emulator.client.execute(emulator.request("/_emulator/stats"))
/// }
/// ```
public func withEmulator<T: Sendable>(
    _ configuration: EmulatorConfiguration = EmulatorConfiguration(),
    _ body: (RunningEmulator) async throws -> T
) async throws -> T {
    let emulator = Emulator(configuration: configuration)
    let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
    let server = Task {
        try await emulator.run { port in
            portContinuation.yield(port)
            portContinuation.finish()
        }
    }
    defer { server.cancel() }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next(), port > 0 else {
        server.cancel()
        _ = try await server.value
        throw EmulatorHarnessError(message: "the emulator did not start listening")
    }
    return try await body(try RunningEmulator(port: port, tls: configuration.tls))
}

/// An emulator started by ``withEmulator(_:_:)``.
public struct RunningEmulator: Sendable {
    /// The port it listens on, on 127.0.0.1.
    public let port: Int
    /// `https` when it serves TLS, else `http`.
    public let scheme: String
    /// With TLS: a PEM file of its certificate authority, for clients to trust.
    public let authorityFile: URL?
    /// A client to talk to it (trusting its authority).
    public let client: ChappieHTTPClient

    init(port: Int, tls: EmulatorTLS?) throws {
        self.port = port
        scheme = tls == nil ? "http" : "https"
        if let tls {
            let file = try TestTokens.temporaryDirectory("chappie-emulator-ca").appendingPathComponent("ca.pem")
            try Data(tls.authorityPEM.utf8).write(to: file)
            authorityFile = file
        } else {
            authorityFile = nil
        }
        client = ChappieHTTPClient(
            configuration: ChappieHTTPClientConfiguration(trust: ChappieTLSTrust(additionalFiles: authorityFile.map { [$0.path] } ?? [])))
    }

    /// `http://127.0.0.1:PORT` (https with TLS): the issuer base URL.
    public var baseURL: URL { URL(string: "\(scheme)://127.0.0.1:\(port)")! }

    /// `http://127.0.0.1:PORT/backend-api`: the backend base URL.
    public var backendURL: URL { baseURL.appendingPathComponent("backend-api") }

    /// A request to a path of the emulator.
    public func request(
        _ path: String, method: ChappieHTTPMethod = .get, json: String? = nil, form: String? = nil, headers: ChappieHTTPHeaders = [:]
    ) -> ChappieHTTPRequest {
        var request = ChappieHTTPRequest(url: URL(string: baseURL.absoluteString + path)!, method: method, headers: headers)
        if let json {
            request.headers["Content-Type"] = "application/json"
            request.body = Data(json.utf8)
        } else if let form {
            request.headers["Content-Type"] = "application/x-www-form-urlencoded"
            request.body = Data(form.utf8)
        }
        return request
    }

    /// Sends a request and decodes its JSON reply (an empty ``JSONDocument`` when it is not JSON).
    public func json(_ request: ChappieHTTPRequest) async throws -> (status: Int, json: JSONDocument) {
        let response = try await client.execute(request)
        return (response.status, JSONDocument(response.body))
    }

    /// Queues a fault (`POST /_emulator/faults` with this JSON, docs/emulator.md).
    public func addFault(_ json: String) async throws {
        _ = try await client.execute(request("/_emulator/faults", method: .post, json: json))
    }

    /// Queues a `status` fault: the next request under `path` is answered with `status` and `body`
    /// (a generic error body when `nil`).
    public func failNext(_ path: String, status: Int, body: String? = nil) async throws {
        var fields: [String: Any] = ["kind": "status", "status": status, "path": path]
        fields["body"] = body
        try await addFault(String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self))
    }
}

/// A parsed JSON document with path look-ups, for assertions.
public struct JSONDocument: @unchecked Sendable {
    /// The parsed value (immutable; JSONSerialization's value types only), `nil` when not JSON.
    public let root: Any?

    /// Parses `data`; a document that is not JSON has no values.
    public init(_ data: Data) {
        root = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
    }

    /// The value at a path of object keys and array indices, such as `["rate_limit", "primary_window"]`.
    public func value(_ path: [Any]) -> Any? {
        var current = root
        for step in path {
            if let key = step as? String {
                current = (current as? [String: Any])?[key]
            } else if let index = step as? Int, let array = current as? [Any], array.indices.contains(index) {
                current = array[index]
            } else {
                return nil
            }
        }
        return current
    }

    /// The string at a path.
    public func string(_ path: Any...) -> String? { value(path) as? String }
    /// The number at a path.
    public func number(_ path: Any...) -> Double? { (value(path) as? NSNumber)?.doubleValue }
    /// The integer at a path.
    public func int(_ path: Any...) -> Int? { (value(path) as? NSNumber)?.intValue }
    /// The boolean at a path.
    public func bool(_ path: Any...) -> Bool? { value(path) as? Bool }
    /// Whether the path holds JSON `null`.
    public func isNull(_ path: Any...) -> Bool { value(path) is NSNull }
    /// Whether the path exists.
    public func has(_ path: Any...) -> Bool { value(path) != nil }
    /// The array at a path.
    public func array(_ path: Any...) -> [Any]? { value(path) as? [Any] }
}

/// The harness could not start the emulator.
public struct EmulatorHarnessError: Error, CustomStringConvertible {
    /// What went wrong.
    public let message: String
    /// Creates the error.
    public init(message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

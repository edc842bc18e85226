internal import CCurl
import ChappieCore
import Foundation

/// One request in flight: an easy handle with everything libcurl reads from it kept alive.
///
/// Built on the caller's thread; once handed to ``CurlMultiLoop`` it is touched only by the loop
/// thread (curl's callbacks run there), so its mutable state needs no lock.
final class CurlTransfer: @unchecked Sendable {
    /// What `stream` waits for: the final response's status and headers.
    struct Head: Sendable {
        var status: Int
        var headers: ChappieHTTPHeaders
    }

    let easy: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private let target: String
    /// The host and port, as people say them, for failures before any byte was exchanged.
    private let server: String

    /// Resumed once, with the head or with the failure that came first.
    var headContinuation: CheckedContinuation<Head, any Error>?
    /// The consumer's end of the body, handed out once by ``takeBody()`` so that dropping it ends the transfer.
    private var body: AsyncThrowingStream<Data, any Error>?
    private let bodyContinuation: AsyncThrowingStream<Data, any Error>.Continuation

    private var status = 0
    private var headers = ChappieHTTPHeaders()
    private var headDelivered = false

    /// Set under the loop's lock when cancellation is asked for (see ``CurlMultiLoop``).
    var cancelRequested = false

    /// - Precondition: libcurl is loaded (``Curl/ensureLoaded()``).
    init(request: ChappieHTTPRequest, configuration: ChappieHTTPClientConfiguration) throws {
        guard let easy = ccurl_easy_init() else {
            throw ChappieHTTPClientError(code: .transferFailed, message: "curl_easy_init failed")
        }
        self.easy = easy
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        self.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        self.target = request.redactedTarget
        self.server = request.url.host.map { host in request.url.port.map { "\(host) port \($0)" } ?? host } ?? request.redactedTarget
        let (body, bodyContinuation) = AsyncThrowingStream.makeStream(of: Data.self)
        self.body = body
        self.bodyContinuation = bodyContinuation
        try configure(request: request, configuration: configuration)
    }

    deinit {
        ccurl_easy_cleanup(easy)
        ccurl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    private func configure(request: ChappieHTTPRequest, configuration: ChappieHTTPClientConfiguration) throws {
        try set(CURLOPT_URL, request.url.absoluteString)
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_FOLLOWLOCATION, 0)
        try set(CURLOPT_TCP_KEEPALIVE, 1)
        try set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        try set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        try set(CURLOPT_ACCEPT_ENCODING, "")
        try set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.wholeMilliseconds)
        // libcurl's idle timeout: fewer than 1 byte per second for this many seconds aborts.
        let idle = request.idleTimeout ?? configuration.idleTimeout
        try set(CURLOPT_LOW_SPEED_LIMIT, 1)
        try set(CURLOPT_LOW_SPEED_TIME, max(1, Int((idle.wholeMilliseconds + 999) / 1000)))
        if let total = request.totalTimeout {
            try set(CURLOPT_TIMEOUT_MS, total.wholeMilliseconds)
        }
        // Trust matters to TLS only: a plain-http (loopback) request never reads a certificate file.
        if request.url.scheme?.lowercased() == "https" { try trust(configuration.trust) }
        if let proxy = configuration.proxy { try set(CURLOPT_PROXY, proxy) }
        if let noProxy = configuration.noProxy { try set(CURLOPT_NOPROXY, noProxy) }
        // An empty proxy is libcurl's "none", over the environment's too.
        if request.bypassesProxy { try set(CURLOPT_PROXY, "") }
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer), "CURLOPT_ERRORBUFFER")

        switch request.method {
        case .get where request.body == nil:
            try set(CURLOPT_HTTPGET, 1)
        case .head:
            try set(CURLOPT_NOBODY, 1)
        default:
            let body = request.body ?? Data()
            try set(CURLOPT_POSTFIELDSIZE_LARGE, body.count)
            if body.isEmpty {
                try set(CURLOPT_COPYPOSTFIELDS, "")
            } else {
                // COPYPOSTFIELDS copies the bytes, so they need not outlive this call.
                let code = body.withUnsafeBytes { bytes in
                    ccurl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                }
                try check(code, "CURLOPT_COPYPOSTFIELDS")
            }
            if request.method != .post { try set(CURLOPT_CUSTOMREQUEST, request.method.rawValue) }
        }

        var headers = request.headers
        if !headers.contains("User-Agent") { headers["User-Agent"] = configuration.userAgent }
        for field in headers {
            // "Name;" is curl's way to send a header with an empty value.
            headerList = ccurl_slist_append(headerList, field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)")
        }
        // "Expect:" stops curl from adding `Expect: 100-continue` and waiting for it before a body.
        if !headers.contains("Expect") { headerList = ccurl_slist_append(headerList, "Expect:") }
        try check(ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList), "CURLOPT_HTTPHEADER")

        let me = Unmanaged.passUnretained(self).toOpaque()
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me), "CURLOPT_HEADERDATA")
        try check(ccurl_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, curlHeaderCallback), "CURLOPT_HEADERFUNCTION")
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me), "CURLOPT_WRITEDATA")
        try check(ccurl_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, curlWriteCallback), "CURLOPT_WRITEFUNCTION")
    }

    private func set(_ option: CURLoption, _ value: Int) throws {
        try check(ccurl_easy_setopt_long(easy, option, value), "option \(option.rawValue)")
    }

    private func set(_ option: CURLoption, _ value: String) throws {
        try check(ccurl_easy_setopt_string(easy, option, value), "option \(option.rawValue)")
    }

    private func check(_ code: CURLcode, _ what: String) throws {
        guard code == CURLE_OK else {
            throw ChappieHTTPClientError(
                code: .transferFailed, message: "libcurl refused \(what): \(String(cString: ccurl_easy_strerror(code)))",
                curlCode: Int(code.rawValue))
        }
    }

    /// Hands the body stream to the response; the transfer keeps no reference to it.
    func takeBody() -> AsyncThrowingStream<Data, any Error> {
        defer { body = nil }
        return body!
    }

    /// Stops the transfer when whoever reads the body stops reading (drops it or is cancelled).
    func cancelWhenBodyIsDropped(on loop: CurlMultiLoop) {
        bodyContinuation.onTermination = { [weak self] termination in
            guard case .cancelled = termination, let self else { return }
            loop.cancel(self)
        }
    }

    // MARK: Loop-thread events

    /// A header line arrived (status line, field, or the blank line that ends a head).
    func receivedHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if line.hasPrefix("HTTP/") {
            // A new response begins (an interim 1xx one may come before the final one).
            let parts = line.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            headers = ChappieHTTPHeaders()
        } else if line.isEmpty {
            if status >= 200 { deliverHead() }
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            headers.add(name: name, value: value)
        }
    }

    /// Body bytes arrived.
    func receivedBody(_ bytes: UnsafeRawBufferPointer) {
        deliverHead()
        bodyContinuation.yield(Data(bytes))
    }

    /// The transfer ended, well or badly.
    func finished(_ code: CURLcode) {
        if code == CURLE_OK {
            if status == 0 {
                var responseCode = 0
                _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &responseCode)
                status = responseCode
            }
            deliverHead()
            bodyContinuation.finish()
        } else {
            fail(error(for: code))
        }
    }

    /// The transfer was stopped before it ended.
    func fail(_ error: any Error) {
        if let continuation = headContinuation {
            headContinuation = nil
            headDelivered = true
            continuation.resume(throwing: error)
        }
        bodyContinuation.finish(throwing: error)
    }

    private func deliverHead() {
        guard !headDelivered else { return }
        headDelivered = true
        headContinuation?.resume(returning: Head(status: status, headers: headers))
        headContinuation = nil
    }

    /// The authorities to trust. A roots file alone replaces libcurl's bundle and directory;
    /// additions go in one bundle with the roots (libcurl takes one), the system's read from the
    /// bundle libcurl was built with.
    private func trust(_ trust: ChappieTLSTrust) throws {
        guard !trust.isSystem else { return }
        try trust.checkFiles()
        if let roots = trust.rootsFile {
            try check(ccurl_easy_setopt_pointer(easy, CURLOPT_CAPATH, nil), "CURLOPT_CAPATH")
            guard !trust.additionalFiles.isEmpty else {
                try set(CURLOPT_CAINFO, roots)
                return
            }
        }
        var system: UnsafePointer<CChar>?
        let systemBundle = ccurl_easy_getinfo_string(easy, CURLINFO_CAINFO, &system) == CURLE_OK ? system.map { String(cString: $0) } : nil
        let bundle = try trust.bundle(systemBundle: systemBundle)
        try bundle.withUnsafeBytes { bytes in
            try check(ccurl_easy_setopt_blob(easy, CURLOPT_CAINFO_BLOB, bytes.baseAddress, bytes.count), "CURLOPT_CAINFO_BLOB")
        }
    }

    private func error(for code: CURLcode) -> ChappieHTTPClientError {
        let detail = String(cString: errorBuffer)
        let reason = detail.isEmpty ? String(cString: ccurl_easy_strerror(code)) : detail
        let kind: ChappieHTTPClientError.Code =
            switch code {
            case CURLE_COULDNT_RESOLVE_HOST: .resolveFailed
            case CURLE_COULDNT_RESOLVE_PROXY: .proxyFailed
            case CURLE_COULDNT_CONNECT: .connectFailed
            case CURLE_OPERATION_TIMEDOUT: .timedOut
            // The server's certificate did not verify, or the authorities to verify it with could not be loaded.
            case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE: .certificateRejected
            case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER: .tlsFailed
            case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE,
                CURLE_HTTP2, CURLE_HTTP2_STREAM:
                .connectionLost
            case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL: .invalidURL
            default: .transferFailed
            }
        // curl's wording ("Couldn't connect to server") says less than this, and nothing of what to do.
        let message =
            switch kind {
            case .resolveFailed: "could not find the host \(server): check the network, and the address in the URL (\(target))"
            case .connectFailed: "could not connect to \(server): nothing answered (the service is down, or the network or a firewall blocks it)"
            case .timedOut: "\(target): no answer in time (the network is slow or down)"
            case .certificateRejected: "the certificate of \(server) did not verify: \(reason). \(ChappieHTTPClientError.trustAdvice)"
            case .tlsFailed: "TLS with \(server) failed: \(reason)"
            default: "\(target): \(reason)"
            }
        return ChappieHTTPClientError(code: kind, message: message, curlCode: Int(code.rawValue))
    }
}

/// Hands a callback's bytes to the transfer named by `userdata`; returns the byte count, as curl expects.
private func deliver(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?,
    to receive: (CurlTransfer) -> (UnsafeRawBufferPointer) -> Void
) -> Int {
    guard let userdata else { return 0 }
    receive(Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue())(UnsafeRawBufferPointer(start: buffer, count: size * count))
    return size * count
}

private func curlHeaderCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    deliver(buffer, size, count, userdata, to: CurlTransfer.receivedHeaderLine)
}

private func curlWriteCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    deliver(buffer, size, count, userdata, to: CurlTransfer.receivedBody)
}

extension URL {
    /// `host[:port]/path` for messages: no scheme, user, query or fragment, which may carry secrets.
    var redactedTarget: String {
        let host = host ?? "?"
        let port = port.map { ":\($0)" } ?? ""
        return "\(host)\(port)\(path)"
    }
}

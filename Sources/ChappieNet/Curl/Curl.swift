internal import CCurl

/// Process-wide libcurl: loaded on the first request (not at start-up), and its version facts.
public enum Curl {
    /// The shared object chappie loads, from Debian's `libcurl4`.
    static let soname = "libcurl.so.4"

    /// libcurl loaded and `curl_global_init` run, exactly once, before the first handle is made;
    /// or why it could not be loaded.
    static let loaded: Result<Void, ChappieHTTPClientError> = {
        if case .failure(let error) = load(soname) { return .failure(error) }
        let code = ccurl_global_init(Int(CURL_GLOBAL_DEFAULT))
        guard code == CURLE_OK else {
            return .failure(ChappieHTTPClientError(code: .libraryUnavailable, message: "curl_global_init failed with code \(code.rawValue)"))
        }
        // CURLOPT_PROTOCOLS_STR, which every transfer sets, came with 7.85.0.
        if let info = ccurl_version_info(), info.pointee.version_num < 0x07_55_00 {
            let version = info.pointee.version.map { String(cString: $0) } ?? "?"
            return .failure(
                ChappieHTTPClientError(
                    code: .libraryUnavailable, message: "libcurl \(version) is too old: chappie needs 7.85.0 or later (Debian 12 has 7.88)"))
        }
        return .success(())
    }()

    /// Loads `soname` and every function chappie calls from it; the wrappers call the first library
    /// loaded this way from then on. A failure changes nothing.
    package static func load(_ soname: String) -> Result<Void, ChappieHTTPClientError> {
        var reason = [CChar](repeating: 0, count: 512)
        guard ccurl_load(soname, &reason, reason.count) == 1 else {
            let detail = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(
                ChappieHTTPClientError(
                    code: .libraryUnavailable,
                    message: "libcurl could not be loaded (\(detail)); install it with: sudo apt-get install libcurl4"))
        }
        return .success(())
    }

    /// Loads libcurl if this is the first use.
    ///
    /// - Throws: ``ChappieHTTPClientError`` with code ``ChappieHTTPClientError/Code/libraryUnavailable`` when it is
    ///   not installed (or too old).
    static func ensureLoaded() throws(ChappieHTTPClientError) {
        try loaded.get()
    }

    /// The version of the libcurl this process runs with, for example `7.88.1`; `nil` when
    /// libcurl cannot be loaded (the reason is ``unavailableReason``).
    public static var version: String? {
        guard (try? ensureLoaded()) != nil, let info = ccurl_version_info(), let version = info.pointee.version else { return nil }
        return String(cString: version)
    }

    /// Why libcurl cannot be loaded, or `nil` when it can.
    public static var unavailableReason: String? {
        if case .failure(let error) = loaded { return error.message }
        return nil
    }

    /// Whether this libcurl can speak HTTP/2 (it needs nghttp2).
    public static var supportsHTTP2: Bool {
        guard (try? ensureLoaded()) != nil, let info = ccurl_version_info() else { return false }
        return info.pointee.features & CURL_VERSION_HTTP2 != 0
    }

    /// The TLS library libcurl was built with, for example `OpenSSL/3.0.17`.
    public static var tlsVersion: String {
        guard (try? ensureLoaded()) != nil, let info = ccurl_version_info(), let ssl = info.pointee.ssl_version else {
            return "none"
        }
        return String(cString: ssl)
    }
}

internal import CCurl

/// Process-wide libcurl facts and its one-time initialisation.
public enum Curl {
    /// `curl_global_init`, run exactly once before the first handle is made.
    static let initialised: Void = {
        let code = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        precondition(code == CURLE_OK, "curl_global_init failed with code \(code.rawValue)")
    }()

    /// The version of the libcurl this process runs with, for example `7.88.1`.
    public static var version: String {
        _ = initialised
        guard let info = ccurl_version_info(), let version = info.pointee.version else {
            return "unknown"
        }
        return String(cString: version)
    }

    /// Whether this libcurl can speak HTTP/2 (it needs nghttp2).
    public static var supportsHTTP2: Bool {
        _ = initialised
        guard let info = ccurl_version_info() else { return false }
        return info.pointee.features & CURL_VERSION_HTTP2 != 0
    }

    /// The TLS library libcurl was built with, for example `OpenSSL/3.0.17`.
    public static var tlsVersion: String {
        _ = initialised
        guard let info = ccurl_version_info(), let ssl = info.pointee.ssl_version else {
            return "none"
        }
        return String(cString: ssl)
    }
}

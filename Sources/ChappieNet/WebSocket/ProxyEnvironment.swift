public import Foundation

/// The proxy the environment names for a URL, by the rules libcurl follows for its requests.
///
/// `https_proxy`/`HTTPS_PROXY` for `https` and `wss`, `http_proxy` for `http` and `ws` (the lower-case
/// form only, as libcurl reads it), `all_proxy`/`ALL_PROXY` for either, and `no_proxy`/`NO_PROXY`
/// (comma-separated host names or domain suffixes, `*` for every host) to bypass them. Loopback is
/// never proxied here.
///
/// ```swift
/// if let proxy = ProxyEnvironment().proxy(for: url) { print("would go through", proxy) }
/// ```
public struct ProxyEnvironment: Sendable {
    private let variables: [String: String]

    /// Reads the process's environment, or the given variables.
    public init(variables: [String: String] = ProcessInfo.processInfo.environment) {
        self.variables = variables
    }

    /// The proxy URL for requests to `url`, or `nil` when they go direct.
    public func proxy(for url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        if ChappieHTTPClient.isLoopback(host: host) || bypasses(host) { return nil }
        let secure = scheme == "https" || scheme == "wss"
        let names = secure ? ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] : ["http_proxy", "all_proxy", "ALL_PROXY"]
        return names.lazy.compactMap { self.variables[$0] }.first { !$0.isEmpty }
    }

    private func bypasses(_ host: String) -> Bool {
        guard let list = variables["no_proxy"] ?? variables["NO_PROXY"] else { return false }
        for entry in list.split(separator: ",") {
            var pattern = entry.trimmingCharacters(in: .whitespaces).lowercased()
            if pattern == "*" { return true }
            if pattern.hasPrefix(".") { pattern.removeFirst() }
            if pattern.isEmpty { continue }
            if host == pattern || host.hasSuffix("." + pattern) { return true }
        }
        return false
    }
}

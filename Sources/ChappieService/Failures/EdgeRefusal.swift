import Foundation

/// A 403 answered with a web page instead of the service's JSON: something before the service
/// refused the request (a company proxy, or the service's own edge protection). Reports from other
/// harnesses say the edge has refused unknown `originator` values, so the way out names the setting
/// that changes chappie's (docs/protocol.md §8).
enum EdgeRefusal {
    /// Whether an answer is such a refusal: 403, and a body that is HTML.
    static func matches(status: Int, body: Data) -> Bool {
        guard status == 403 else { return false }
        let start = String(decoding: body.prefix(512), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        return start.hasPrefix("<!doctype html") || start.hasPrefix("<html") || start.contains("<head") || start.contains("<body")
    }

    /// What it means and what to do, for a request that named itself `originator` (when known).
    static func explanation(originator: String?) -> String {
        "a web page came back instead of the service's answer (HTTP 403): something before the service refused the request, a proxy or the service's edge. If you are behind a proxy, ask whoever runs it; if the service refuses chappie's originator (\(originator ?? "see chappie config get originator")), set another with chappie config set originator NAME"
    }
}

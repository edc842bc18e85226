import ChappieNet
package import Foundation
import Synchronization

/// Where an account's Responses requests go, as `GET …/wham/accounts/check` says (workspace
/// routing discovery, docs/protocol.md §8): the configured backend's origin, or another one for a
/// workspace pinned to a region, with the routing header that names the region.
///
/// Read as the Codex CLI (0.156 and later) reads it, so that chappie reaches a region-pinned
/// business workspace as Codex does; any answer that breaks a rule is not used, and the configured
/// origin is.
package struct WorkspaceRoute: Sendable, Equatable {
    /// The origin (`https://host[:port]`, as the answer spelled it) to send Responses requests to;
    /// `nil` for the configured one.
    package var origin: URL?
    /// `us` or `us_cr`, sent as `x-openai-account-routing-override`; `nil` for `NO_CONSTRAINT`.
    package var routingOverride: String?

    /// A route to `origin` (`nil`: the configured one) with the region header `routingOverride`.
    package init(origin: URL?, routingOverride: String?) {
        self.origin = origin
        self.routingOverride = routingOverride
    }

    /// The configured origin, with no header.
    package static let configured = WorkspaceRoute(origin: nil, routingOverride: nil)

    /// The header that names a pinned region.
    package static let routingHeader = "x-openai-account-routing-override"

    /// The route in a discovery answer for the account `accountID`; `nil` when the answer breaks a
    /// rule: not a JSON object, no `accounts`, not exactly one entry with the id, an override other
    /// than `NO_CONSTRAINT`, `us` or `us_cr`, or an origin that is neither `NO_CONSTRAINT` nor a
    /// bare `https` origin.
    package static func parse(_ body: Data, accountID: String) -> WorkspaceRoute? {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else { return nil }
        var entries: [[String: Any]] = []
        switch object["accounts"] {
        case let list as [[String: Any]]:
            entries = list
        case let map as [String: Any]:
            // The map form: {"<id>": {"account": {...}}}; each key must be its entry's id.
            for (key, value) in map {
                guard let entry = (value as? [String: Any])?["account"] as? [String: Any], Self.id(of: entry) == key else { return nil }
                entries.append(entry)
            }
        default:
            return nil
        }
        let ids = entries.map(Self.id(of:))
        guard !ids.contains(where: { $0?.isEmpty ?? true }), Set(ids).count == ids.count else { return nil }
        let matching = entries.filter { Self.id(of: $0) == accountID }
        guard matching.count == 1, let entry = matching.first else { return nil }
        let routingOverride: String?
        switch entry["account_routing_override"] as? String {
        case "NO_CONSTRAINT": routingOverride = nil
        case let region? where ["us", "us_cr"].contains(region): routingOverride = region
        default: return nil
        }
        switch entry["workspace_backend_origin"] as? String {
        case "NO_CONSTRAINT":
            return WorkspaceRoute(origin: nil, routingOverride: routingOverride)
        case let text?:
            guard let origin = URL(string: text.hasSuffix("/") ? String(text.dropLast()) : text), origin.scheme == "https",
                let host = origin.host, !host.isEmpty, origin.path.isEmpty, origin.query == nil, origin.fragment == nil, origin.user == nil,
                origin.password == nil, origin.port.map({ (1...65535).contains($0) }) ?? true
            else { return nil }
            let route = WorkspaceRoute(origin: origin, routingOverride: routingOverride)
            // An origin that cannot carry the Responses path is no answer at all.
            guard route.applied(to: URL(string: "https://chatgpt.com/backend-api/codex/responses")!) != nil else { return nil }
            return route
        case nil:
            return nil
        }
    }

    private static func id(of entry: [String: Any]) -> String? {
        (entry["id"] as? String) ?? (entry["account_id"] as? String)
    }

    /// `url` sent to this route's origin: its scheme (`wss` for a WebSocket), host and port
    /// replaced, its path kept; unchanged for the configured origin; `nil` when they do not make a
    /// URL. Built from the origin's text, so that an IPv6 host keeps its brackets.
    package func applied(to url: URL) -> URL? {
        guard let origin else { return url }
        let webSocket = ["ws", "wss"].contains(url.scheme?.lowercased() ?? "")
        let authority = origin.absoluteString.dropFirst("https://".count)
        let query = url.query.map { "?" + $0 } ?? ""
        return URL(string: (webSocket ? "wss://" : "https://") + authority + url.path + query)
    }
}

/// Discovery answers kept in memory for a client's life, by account and credential generation
/// (the access token they were asked with): a refreshed token asks again, as Codex does after
/// every refresh. No answer (a failure, a timeout, one that breaks a rule) is kept a minute only,
/// so that a region-pinned account is not sent to the wrong origin for a token's whole life.
package final class WorkspaceRoutes: Sendable {
    /// The token's hash, not the token: the process's hash seed is fixed for its life, and a
    /// collision would only reuse another generation's route.
    private let kept = Mutex<[String: (generation: Int, route: WorkspaceRoute, expires: ContinuousClock.Instant?)]>([:])
    private let now: @Sendable () -> ContinuousClock.Instant

    /// How long the configured origin is used after a discovery gave no answer.
    package static let retryAfterNoAnswer = Duration.seconds(60)

    /// Routes kept by the time `now` tells.
    package init(now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.now = now
    }

    /// The route for `accountID` asked with `accessToken`, asking `fetch` the first time (`nil`:
    /// no answer, the configured origin for now).
    package func route(accountID: String, accessToken: String, fetch: () async -> WorkspaceRoute?) async -> WorkspaceRoute {
        let generation = accessToken.hashValue
        if let known = kept.withLock({ $0[accountID] }), known.generation == generation, known.expires.map({ now() < $0 }) ?? true {
            return known.route
        }
        let answer = await fetch()
        // A cancelled ask is no answer to remember.
        guard !Task.isCancelled else { return answer ?? .configured }
        let expires = answer == nil ? now() + Self.retryAfterNoAnswer : nil
        kept.withLock { $0[accountID] = (generation, answer ?? .configured, expires) }
        return answer ?? .configured
    }
}

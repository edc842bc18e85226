import Chappie
import ChappieTestSupport
import Foundation
import Synchronization
import Testing

@Suite("Workspace routing discovery read as Codex reads it: the account's entry, its override and origin, and every rule that rejects an answer")
struct WorkspaceRouteTests {
    private let personal = "4b0e8a46-6f3a-4d3e-9c1b-0c0de0f1a2b3"
    private let pinned = "9d2f6c1e-2b7a-4e44-8f0a-5a6b7c8d9e0f"

    @Test("The fixtures: NO_CONSTRAINT keeps the configured origin; a pinned workspace names its origin and region, in either form")
    func fixtures() throws {
        let list = try Fixtures.data("wham-accounts-check.json")
        #expect(WorkspaceRoute.parse(list, accountID: personal) == .configured)
        let us = try #require(WorkspaceRoute.parse(list, accountID: pinned))
        #expect(us.origin?.absoluteString == "https://us.chatgpt.example")
        #expect(us.routingOverride == "us")
        let map = try #require(WorkspaceRoute.parse(try Fixtures.data("wham-accounts-check-map.json"), accountID: pinned))
        #expect(map.routingOverride == "us_cr")
        // The path is kept; the scheme, host and port are the origin's.
        #expect(
            map.applied(to: URL(string: "https://chatgpt.com/backend-api/codex/responses")!)?.absoluteString
                == "https://us-cr.chatgpt.example:8443/backend-api/codex/responses")
        #expect(
            map.applied(to: URL(string: "wss://chatgpt.com/backend-api/codex/responses")!)?.absoluteString
                == "wss://us-cr.chatgpt.example:8443/backend-api/codex/responses")
        // An IPv6 origin keeps its brackets.
        let v6 = try #require(
            WorkspaceRoute.parse(
                Data(#"{"accounts":[{"id":"a","workspace_backend_origin":"https://[::1]:8443/","account_routing_override":"us"}]}"#.utf8),
                accountID: "a"))
        #expect(
            v6.applied(to: URL(string: "wss://chatgpt.com/backend-api/codex/responses")!)?.absoluteString
                == "wss://[::1]:8443/backend-api/codex/responses")
        #expect(WorkspaceRoute.configured.applied(to: URL(string: "https://chatgpt.com/x")!)?.absoluteString == "https://chatgpt.com/x")
    }

    @Test(
        "An answer that breaks a rule is not used",
        arguments: [
            ("not JSON", "<html>"),
            ("no accounts", #"{"default_account_id":"a"}"#),
            ("not the account", #"{"accounts":[{"id":"b","workspace_backend_origin":"NO_CONSTRAINT","account_routing_override":"NO_CONSTRAINT"}]}"#),
            (
                "an empty id",
                #"{"accounts":[{"id":"","workspace_backend_origin":"NO_CONSTRAINT","account_routing_override":"NO_CONSTRAINT"},{"id":"a","workspace_backend_origin":"NO_CONSTRAINT","account_routing_override":"NO_CONSTRAINT"}]}"#
            ),
            (
                "a repeated id",
                #"{"accounts":[{"id":"a","workspace_backend_origin":"NO_CONSTRAINT","account_routing_override":"NO_CONSTRAINT"},{"id":"a","workspace_backend_origin":"NO_CONSTRAINT","account_routing_override":"NO_CONSTRAINT"}]}"#
            ),
            (
                "a map key that is not the id",
                #"{"accounts":{"x":{"account":{"id":"a","workspace_backend_origin":"NO_CONSTRAINT","account_routing_override":"NO_CONSTRAINT"}}}}"#
            ),
            ("an unknown override", #"{"accounts":[{"id":"a","workspace_backend_origin":"NO_CONSTRAINT","account_routing_override":"eu"}]}"#),
            ("no override", #"{"accounts":[{"id":"a","workspace_backend_origin":"NO_CONSTRAINT"}]}"#),
            ("no origin", #"{"accounts":[{"id":"a","account_routing_override":"NO_CONSTRAINT"}]}"#),
            ("an http origin", #"{"accounts":[{"id":"a","workspace_backend_origin":"http://us.example","account_routing_override":"us"}]}"#),
            (
                "an origin with a path",
                #"{"accounts":[{"id":"a","workspace_backend_origin":"https://us.example/backend-api","account_routing_override":"us"}]}"#
            ),
            (
                "an origin with credentials",
                #"{"accounts":[{"id":"a","workspace_backend_origin":"https://u:p@us.example","account_routing_override":"us"}]}"#
            ),
            (
                "a port out of range",
                #"{"accounts":[{"id":"a","workspace_backend_origin":"https://us.example:99999","account_routing_override":"us"}]}"#
            ),
        ])
    func rejected(_ case: (String, String)) {
        #expect(WorkspaceRoute.parse(Data(`case`.1.utf8), accountID: "a") == nil, "\(`case`.0)")
    }
}

@Suite("Workspace routes kept by account and token: an answer for the token's life, no answer for a minute")
struct WorkspaceRoutesTests {
    @Test("No answer: the configured origin, asked again a minute later; an answer: kept until the token changes")
    func keeping() async throws {
        let start = ContinuousClock.now
        let elapsed = Mutex(Duration.zero)
        let routes = WorkspaceRoutes(now: { start + elapsed.withLock { $0 } })
        let asked = Mutex(0)
        let pinned = WorkspaceRoute(origin: URL(string: "https://us.example")!, routingOverride: "us")
        func route(_ token: String, answer: WorkspaceRoute?) async -> WorkspaceRoute {
            await routes.route(accountID: "a", accessToken: token) {
                asked.withLock { $0 += 1 }
                return answer
            }
        }
        #expect(await route("t1", answer: nil) == .configured)
        #expect(await route("t1", answer: pinned) == .configured, "within the minute, no answer is not asked again")
        #expect(asked.withLock { $0 } == 1)
        elapsed.withLock { $0 = WorkspaceRoutes.retryAfterNoAnswer + .seconds(1) }
        #expect(await route("t1", answer: pinned) == pinned)
        #expect(asked.withLock { $0 } == 2)
        elapsed.withLock { $0 += .seconds(86_400) }
        #expect(await route("t1", answer: nil) == pinned, "an answer is kept for the token's life")
        #expect(asked.withLock { $0 } == 2)
        #expect(await route("t2", answer: .configured) == .configured, "a new token asks again")
        #expect(asked.withLock { $0 } == 3)
    }
}

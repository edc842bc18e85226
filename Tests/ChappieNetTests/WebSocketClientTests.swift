import ChappieNet
import ChappieTestSupport
import Foundation
import Testing

@Suite("WebSocket client rules, Retry-After and the proxy environment")
struct WebSocketClientTests {
    @Test("Credentials over plain ws are refused unless the host is loopback; only ws and wss URLs are accepted")
    func plainWebSocketRefused() async throws {
        let client = ChappieWebSocketClient()
        let headers: ChappieHTTPHeaders = ["Authorization": "Bearer secret-token-value"]
        await #expect {
            try await client.connect(url: URL(string: "ws://chatgpt.example/backend-api/codex/responses")!, headers: headers) { _ in }
        } throws: { error in
            guard let error = error as? ChappieHTTPClientError, error.code == .insecureAuthorization else { return false }
            return !error.description.contains("secret-token-value")
        }
        await #expect { try await client.connect(url: URL(string: "https://chatgpt.example/")!, headers: [:]) { _ in } } throws: { error in
            (error as? ChappieHTTPClientError)?.code == .invalidURL
        }
    }

    @Test("A refused connection fails with connectFailed and names the host only")
    func refusedConnection() async throws {
        let port = try closedLoopbackPort()
        await #expect { try await ChappieWebSocketClient().connect(url: URL(string: "ws://127.0.0.1:\(port)/x")!, headers: [:]) { _ in } } throws: {
            error in
            (error as? ChappieHTTPClientError)?.code == .connectFailed
        }
    }

    @Test("Retry-After: delay-seconds, an IMF-fixdate, the obsolete forms; nonsense is ignored")
    func retryAfter() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)  // Tue, 14 Nov 2023 22:13:20 GMT
        #expect(ChappieHTTPHeaders.retryAfter("120", now: now) == 120)
        #expect(ChappieHTTPHeaders.retryAfter("Tue, 14 Nov 2023 22:13:50 GMT", now: now) == 30)
        #expect(ChappieHTTPHeaders.retryAfter("Tuesday, 14-Nov-23 22:14:20 GMT", now: now) == 60)
        #expect(ChappieHTTPHeaders.retryAfter("Tue Nov 14 22:13:25 2023", now: now) == 5)
        #expect(ChappieHTTPHeaders.retryAfter("Tue, 14 Nov 2023 22:00:00 GMT", now: now) == 0)  // in the past: now
        #expect(ChappieHTTPHeaders.retryAfter("soon", now: now) == nil)
        #expect(ChappieHTTPHeaders.retryAfter("Sat Nov  4 22:13:25 2023", now: Date(timeIntervalSince1970: 1_699_135_995)) == 10)
    }

    @Test("HTTP dates are read by hand: the calendar checked, a two-digit year within 50 years, GMT only, nothing out of range")
    func httpDates() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)  // 2023
        #expect(ChappieHTTPHeaders.httpDate("Thu, 29 Feb 2024 00:00:00 GMT", now: now) == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(ChappieHTTPHeaders.httpDate("Thu, 01 Jan 1970 00:00:00 GMT", now: now) == Date(timeIntervalSince1970: 0))
        #expect(ChappieHTTPHeaders.httpDate("Fri, 31 Dec 9999 23:59:59 GMT", now: now) == Date(timeIntervalSince1970: 253_402_300_799))
        #expect(ChappieHTTPHeaders.httpDate("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == Date(timeIntervalSince1970: 784_111_777))
        #expect(
            ChappieHTTPHeaders.httpDate("Monday, 01-Jan-70 00:00:00 GMT", now: now) == Date(timeIntervalSince1970: 3_155_760_000),
            "2070 is within 50 years of 2023")
        for bad in [
            "Fri, 30 Feb 2024 00:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 99999 08:49:37 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun Nov 0 08:49:37 1994", "Sun, 06 Nov 1994 08:49 GMT", "",
        ] {
            #expect(ChappieHTTPHeaders.httpDate(bad, now: now) == nil, "\(bad)")
        }
    }

    @Test("The proxy for a URL: https_proxy for wss, http_proxy for ws, NO_PROXY and loopback bypass it")
    func proxyEnvironment() {
        let wss = URL(string: "wss://chatgpt.com/backend-api/codex/responses")!
        let environment = ProxyEnvironment(variables: ["HTTPS_PROXY": "http://proxy:3128", "http_proxy": "http://plain:8080"])
        #expect(environment.proxy(for: wss) == "http://proxy:3128")
        #expect(environment.proxy(for: URL(string: "ws://example.org/x")!) == "http://plain:8080")
        #expect(environment.proxy(for: URL(string: "ws://127.0.0.1:8080/x")!) == nil)
        #expect(ProxyEnvironment(variables: ["HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "example.org,.chatgpt.com"]).proxy(for: wss) == nil)
        #expect(ProxyEnvironment(variables: ["HTTPS_PROXY": "http://proxy:3128", "no_proxy": "*"]).proxy(for: wss) == nil)
        #expect(ProxyEnvironment(variables: ["ALL_PROXY": "socks5://s:1080"]).proxy(for: wss) == "socks5://s:1080")
        #expect(ProxyEnvironment(variables: [:]).proxy(for: wss) == nil)
    }
}

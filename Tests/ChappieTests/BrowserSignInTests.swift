import Chappie
import ChappieEmulator
import ChappieNet
import ChappieTestSupport
import ChappieVault
import Foundation
import Synchronization
import Testing

@Suite("The SDK's browser sign-in: authorize URL, loopback callback, state, exchange, timeout")
struct BrowserSignInTests {
    private func oauth(_ emulator: RunningEmulator) throws -> OAuthClient {
        OAuthClient(
            endpoints: try ChappieEndpoints(issuer: emulator.baseURL.absoluteString, backend: emulator.backendURL.absoluteString),
            http: emulator.client)
    }

    /// The sign-in's progress, kept for the test to read.
    private final class Seen: Sendable {
        let steps = Mutex<[BrowserSignIn.Step]>([])
        var url: URL? { steps.withLock { $0.compactMap { if case .waiting(let url, _, _) = $0 { url } else { nil } }.first } }
        var port: Int? { steps.withLock { $0.compactMap { if case .waiting(_, let port, _) = $0 { port } else { nil } }.first } }
        func until<T>(_ value: () -> T?) async throws -> T {
            for _ in 0..<500 {
                if let found = value() { return found }
                try await Task.sleep(for: .milliseconds(10))
            }
            throw EmulatorHarnessError(message: "the sign-in never started listening")
        }
    }

    /// The listener's URL with its host as the address it listens on.
    private func loopback(_ url: URL) throws -> URL {
        var components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        components.host = "127.0.0.1"
        return try #require(components.url)
    }

    /// A browser opening the start URL: its cookie and the authorize URL it redirects to.
    private func start(_ url: URL, with client: ChappieHTTPClient) async throws -> (cookie: String, authorize: URL) {
        let started = try await client.execute(ChappieHTTPRequest(url: try loopback(url)))
        #expect(started.status == 302)
        let setCookie = try #require(started.headers["Set-Cookie"])
        #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Lax"))
        let authorize = try #require(started.headers["Location"].flatMap(URL.init(string:)))
        return (String(setCookie.prefix { $0 != ";" }), authorize)
    }

    /// A browser: GET the authorize URL, then follow its redirect to the loopback listener with the cookie.
    private func follow(_ url: URL, cookie: String, with client: ChappieHTTPClient) async throws -> (
        status: Int, location: URLComponents, page: String
    ) {
        let authorize = try await client.execute(ChappieHTTPRequest(url: url))
        #expect(authorize.status == 302)
        let location = try #require(authorize.headers["Location"].flatMap(URLComponents.init(string:)))
        // Without the cookie the callback is refused (prepared by someone who only read the URLs), and the wait goes on.
        let callback = try loopback(try #require(location.url))
        #expect(try await client.execute(ChappieHTTPRequest(url: callback)).status == 400)
        let page = try await client.execute(ChappieHTTPRequest(url: callback, headers: ["Cookie": cookie]))
        return (page.status, location, String(decoding: page.body, as: UTF8.self))
    }

    @Test("The authorize URL carries §2's parameters; the redirect's code is exchanged with the verifier and the same redirect_uri")
    func signsIn() async throws {
        try await withEmulator { emulator in
            let seen = Seen()
            let signIn = BrowserSignIn(oauth: try oauth(emulator), ports: [0])
            async let result = signIn.run { step in seen.steps.withLock { $0.append(step) } }
            let startURL = try await seen.until { seen.url }
            let port = try await seen.until { seen.port }
            #expect(startURL.host == "localhost" && startURL.port == port && startURL.path.hasPrefix("/start/"))
            #expect(!startURL.absoluteString.contains("state") && !startURL.absoluteString.contains("challenge"))
            let (cookie, url) = try await start(startURL, with: emulator.client)
            let query = Dictionary(
                uniqueKeysWithValues: (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") })
            #expect(url.path == "/oauth/authorize")
            #expect(query["response_type"] == "code")
            #expect(query["client_id"] == codexClientID)
            #expect(query["redirect_uri"] == "http://localhost:\(port)/auth/callback")
            #expect(query["scope"] == "openid profile email offline_access api.connectors.read api.connectors.invoke")
            #expect(query["code_challenge_method"] == "S256")
            #expect(query["code_challenge"]?.count == 43)
            #expect(query["state"]?.count == 43)
            #expect(query["id_token_add_organizations"] == "true")
            #expect(query["codex_cli_simplified_flow"] == "true")
            #expect(query["originator"] == "codex_cli_rs")

            let followed = try await follow(url, cookie: cookie, with: emulator.client)
            #expect(followed.status == 200)
            #expect(followed.page.contains("You can close this tab"))
            let signedIn = try await result
            #expect(signedIn.account.email == "user1@example.com")
            #expect(signedIn.credentials.refreshToken.isEmpty == false)
            #expect(seen.steps.withLock { $0.count } == 2, "waiting, then exchanging")

            // The listener is gone once the sign-in ended.
            await #expect(throws: (any Error).self) {
                _ = try await emulator.client.execute(ChappieHTTPRequest(url: URL(string: "http://127.0.0.1:\(port)/auth/callback")!))
            }
        }
    }

    @Test("A code is bound to its verifier and redirect_uri: the emulator refuses an exchange with another")
    func codeIsBound() async throws {
        try await withEmulator { emulator in
            let pkce = try PKCE()
            var components = URLComponents(string: emulator.baseURL.absoluteString + "/oauth/authorize")!
            components.queryItems = [
                ("response_type", "code"), ("client_id", codexClientID), ("redirect_uri", "http://localhost:1455/auth/callback"),
                ("scope", "openid offline_access"), ("code_challenge", pkce.challenge), ("code_challenge_method", "S256"), ("state", pkce.state),
            ].map { URLQueryItem(name: $0.0, value: $0.1) }
            let authorize = try await emulator.client.execute(ChappieHTTPRequest(url: components.url!))
            #expect(authorize.status == 302)
            let location = try #require(authorize.headers["Location"].flatMap(URLComponents.init(string:)))
            #expect(location.queryItems?.first { $0.name == "state" }?.value == pkce.state)
            let code = try #require(location.queryItems?.first { $0.name == "code" }?.value)
            let client = try oauth(emulator)
            await #expect(throws: ChappieAuthError.self) {
                _ = try await client.exchange(
                    authorizationCode: code, codeVerifier: pkce.verifier, redirectURI: "http://localhost:1457/auth/callback")
            }
            await #expect(throws: ChappieAuthError.self) { _ = try await client.exchange(authorizationCode: code, codeVerifier: pkce.verifier) }
            // A refused exchange does not spend the code: the right one still works, once.
            _ = try await client.exchange(authorizationCode: code, codeVerifier: pkce.verifier, redirectURI: "http://localhost:1455/auth/callback")

            // A request that is not a PKCE loopback authorization is refused with 400.
            components.queryItems = components.queryItems?.filter { $0.name != "code_challenge" }
            #expect(try await emulator.client.execute(ChappieHTTPRequest(url: components.url!)).status == 400)
        }
    }

    @Test("No callback within callbackTimeout is .callbackTimeout; cancelling is .cancelledSignIn; both close the listener")
    func timeoutAndCancel() async throws {
        try await withEmulator { emulator in
            let seen = Seen()
            let patient = BrowserSignIn(oauth: try oauth(emulator), ports: [0], callbackTimeout: .milliseconds(300))
            await #expect(throws: ChappieAuthError.callbackTimeout) { _ = try await patient.run { step in seen.steps.withLock { $0.append(step) } } }
            let port = try await seen.until { seen.port }
            await #expect(throws: (any Error).self) {
                _ = try await emulator.client.execute(ChappieHTTPRequest(url: URL(string: "http://127.0.0.1:\(port)/")!))
            }

            let cancelled = Seen()
            let waiting = BrowserSignIn(oauth: try oauth(emulator), ports: [0])
            let task = Task { try await waiting.run { step in cancelled.steps.withLock { $0.append(step) } } }
            let cancelledPort = try await cancelled.until { cancelled.port }
            // A forged callback (another state) is answered 400 and does not end the wait.
            let forged = try await emulator.client.execute(
                ChappieHTTPRequest(url: URL(string: "http://127.0.0.1:\(cancelledPort)/auth/callback?code=x&state=forged")!))
            #expect(forged.status == 400)
            task.cancel()
            await #expect(throws: ChappieAuthError.cancelledSignIn) { _ = try await task.value }
            await #expect(throws: (any Error).self) {
                _ = try await emulator.client.execute(ChappieHTTPRequest(url: URL(string: "http://127.0.0.1:\(cancelledPort)/")!))
            }
        }
    }

    @Test("A port that is taken falls back to the next one")
    func portFallback() async throws {
        try await withEmulator { emulator in
            let taken = try await LoopbackCallbackServer.listen(ports: [0]) { _ in .init(status: 404, message: "", deliver: false) }
            let seen = Seen()
            let signIn = BrowserSignIn(oauth: try oauth(emulator), ports: [taken.port, 0], callbackTimeout: .milliseconds(200))
            await #expect(throws: ChappieAuthError.callbackTimeout) { _ = try await signIn.run { step in seen.steps.withLock { $0.append(step) } } }
            let port = try await seen.until { seen.port }
            #expect(port != taken.port)
            let none = BrowserSignIn(oauth: try oauth(emulator), ports: [taken.port])
            await #expect(throws: ChappieAuthError.self) { _ = try await none.run() }
            await taken.close()
        }
    }

    @Test("A second fetch of the start URL ends the sign-in and stores nothing")
    func startTwice() async throws {
        try await withEmulator { emulator in
            let seen = Seen()
            let signIn = BrowserSignIn(oauth: try oauth(emulator), ports: [0])
            let task = Task { try await signIn.run { step in seen.steps.withLock { $0.append(step) } } }
            let startURL = try await seen.until { seen.url }
            _ = try await start(startURL, with: emulator.client)
            let second = try await emulator.client.execute(ChappieHTTPRequest(url: try loopback(startURL)))
            #expect(second.status == 409)
            await #expect { _ = try await task.value } throws: { error in
                guard case .unknown(let reason) = error as? ChappieAuthError else { return false }
                return reason.contains("opened a second time")
            }
        }
    }

    @Test("Another user's connection is refused, whatever it knows", .enabled(if: OtherUser.isPossible, "runs curl as nobody"))
    func otherUserRefused() async throws {
        try await withEmulator { emulator in
            let seen = Seen()
            let signIn = BrowserSignIn(oauth: try oauth(emulator), ports: [0], callbackTimeout: .seconds(30))
            let task = Task { try await signIn.run { step in seen.steps.withLock { $0.append(step) } } }
            let startURL = try loopback(try await seen.until { seen.url })
            let asNobody = try await OtherUser.nobody.run(
                URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-o", "/dev/null", "-w", "%{http_code}", startURL.absoluteString])
            #expect(asNobody.stdout == "403", "\(asNobody.stdout) \(asNobody.stderr)")
            // The start URL is still unopened: the user's own browser goes on.
            #expect(try await emulator.client.execute(ChappieHTTPRequest(url: startURL)).status == 302)
            task.cancel()
            _ = try? await task.value
        }
    }
}

package import ChappieCore
import ChappieNet
import ChappieVault
package import Foundation
import Synchronization

/// The browser sign-in of docs/protocol.md §2 (authorization code with PKCE), for workspaces
/// where device codes are disabled: a loopback listener for the redirect, the authorize URL for the
/// user's browser, a `state` check, and the code exchange with the verifier.
///
/// The browser is not given the authorize URL, whose `state` and PKCE challenge another local user
/// could read on its command line in /proc, but a one-time start URL on the listener. Its first
/// fetch sets a cookie holding a second secret (HttpOnly, SameSite=Lax, for `localhost`, so that it
/// comes back with the issuer's redirect) and redirects to the authorize URL; the callback must
/// carry that cookie. A second fetch of the start URL ends the sign-in, since someone else may have
/// opened it first. The listener serves only connections of the user running chappie.
///
/// ```swift
/// let result = try await BrowserSignIn(oauth: oauth).run { step in
///     if case .waiting(let url, _, _) = step { print("Open \(url)") }
/// }
/// ```
package struct BrowserSignIn: Sendable {
    /// Where the sign-in is.
    package enum Step: Sendable {
        /// Listening on `port`: the user must open `startURL` (which leads to the authorize URL),
        /// before `expiresAt`.
        case waiting(startURL: URL, port: Int, expiresAt: Date)
        /// The browser came back with a code: exchanging it.
        case exchangingCode
    }

    /// The ports Codex registered for the redirect: 1455, else 1457.
    package static let registeredPorts = [1455, 1457]
    /// The scopes Codex asks for.
    package static let scope = "openid profile email offline_access api.connectors.read api.connectors.invoke"

    /// The `originator` of the authorize URL: the Codex CLI's own, since chappie signs in as Codex's
    /// OAuth client and other values are not documented (docs/protocol.md §2).
    package static let originator = "codex_cli_rs"

    /// The issuer client.
    package let oauth: OAuthClient
    /// The ports to listen on, the first free one (0: any free port).
    package var ports: [Int]
    /// How long to wait for the browser to come back before `.callbackTimeout`: 15 minutes.
    package var callbackTimeout: Duration

    /// Creates a sign-in.
    package init(oauth: OAuthClient, ports: [Int] = registeredPorts, callbackTimeout: Duration = .seconds(15 * 60)) {
        self.oauth = oauth
        self.ports = ports
        self.callbackTimeout = callbackTimeout
    }

    /// Runs the sign-in: listens, reports the authorize URL through `progress`, waits for the
    /// redirect carrying our `state` (others are answered 400 and ignored), exchanges the code, and
    /// stops listening whatever the outcome.
    ///
    /// - Throws: ``ChappieAuthError``: `.authorizationDenied` when the browser comes back with an
    ///   error, `.callbackTimeout` after ``callbackTimeout``, `.cancelledSignIn` when the task is
    ///   cancelled, `.networkFailure` when no port is free, `.secureRandomFailed` when the random
    ///   source cannot make the PKCE values, and the exchange's errors.
    package func run(progress: @Sendable (Step) async -> Void = { _ in }) async throws(ChappieAuthError) -> DeviceCodeSignIn.Result {
        let pkce: PKCE
        do {
            pkce = try PKCE()
        } catch {
            throw .secureRandomFailed(statusCode: error.status)
        }
        let secrets = Secrets()
        let server: LoopbackCallbackServer
        let authorize = Mutex<URL?>(nil)
        do {
            server = try await LoopbackCallbackServer.listen(ports: ports) { request in
                Self.answer(request, state: pkce.state, secrets: secrets, authorizeURL: authorize.withLock { $0 })
            }
        } catch {
            throw .networkFailure(error.message)
        }
        let redirectURI = "http://localhost:\(server.port)/auth/callback"
        authorize.withLock { $0 = authorizeURL(pkce: pkce, redirectURI: redirectURI) }
        let result: Result<DeviceCodeSignIn.Result, ChappieAuthError>
        do throws(ChappieAuthError) {
            guard let startURL = URL(string: "http://localhost:\(server.port)\(secrets.startPath)") else { throw .invalidResponse }
            await progress(
                .waiting(startURL: startURL, port: server.port, expiresAt: Date().addingTimeInterval(Double(callbackTimeout.components.seconds))))
            let callback = try await firstCallback(from: server)
            if callback.path == secrets.startPath {
                throw .unknown(
                    "the sign-in's start page was opened a second time, so someone else may have opened it first; nothing was stored. Start again")
            }
            if let error = callback.query["error"] {
                let description = callback.query["error_description"] ?? error
                throw .authorizationDenied(
                    description.contains("missing_codex_entitlement") ? "Codex is not enabled for this workspace (\(description))" : description)
            }
            guard let code = callback.query["code"], !code.isEmpty else { throw .invalidResponse }
            await progress(.exchangingCode)
            let credentials = try await oauth.exchange(authorizationCode: code, codeVerifier: pkce.verifier, redirectURI: redirectURI)
            guard let claims = try? TokenClaims(jwt: credentials.idToken) else { throw .invalidResponse }
            result = .success(
                DeviceCodeSignIn.Result(credentials: credentials, account: claims.account, accessTokenExpiresAt: credentials.accessTokenExpiresAt))
        } catch {
            result = .failure(error)
        }
        await server.close()
        return try result.get()
    }

    /// The authorize URL (§2's parameters).
    func authorizeURL(pkce: PKCE, redirectURI: String) -> URL {
        var components = URLComponents(url: oauth.endpoints.authorizeURL, resolvingAgainstBaseURL: false)!
        // Every value fully percent-encoded, as a form encoder would (URLComponents would leave `:`,
        // `/` and `+` in values as they are).
        components.percentEncodedQuery = [
            ("response_type", "code"), ("client_id", OAuthClient.clientID), ("redirect_uri", redirectURI), ("scope", Self.scope),
            ("code_challenge", pkce.challenge), ("code_challenge_method", "S256"), ("id_token_add_organizations", "true"),
            ("codex_cli_simplified_flow", "true"), ("state", pkce.state), ("originator", Self.originator),
        ].map { "\($0.0)=\(OAuthClient.formEncode($0.1))" }.joined(separator: "&")
        return components.url!
    }

    /// The first callback carrying our state, within ``callbackTimeout``.
    private func firstCallback(from server: LoopbackCallbackServer) async throws(ChappieAuthError) -> LoopbackCallbackServer.Request {
        let timeout = callbackTimeout
        let outcome = await withTaskGroup(of: Result<LoopbackCallbackServer.Request, ChappieAuthError>?.self) { group in
            group.addTask {
                for await request in server.requests { return .success(request) }
                return .failure(.cancelledSignIn)
            }
            group.addTask {
                do {
                    try await Task.sleep(for: timeout)
                    return .failure(.callbackTimeout)
                } catch {
                    return nil
                }
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            await server.close()
            return first ?? .failure(.cancelledSignIn)
        }
        if Task.isCancelled { throw .cancelledSignIn }
        return try outcome.get()
    }

    /// The one-time start URL's path and the cookie's value: random, never on a command line.
    private final class Secrets: Sendable {
        let startPath = "/start/" + PKCE.randomBase64URL(byteCount: 32)
        let cookie = PKCE.randomBase64URL(byteCount: 32)
        /// How many times the start URL was fetched.
        let starts = Mutex(0)
    }

    /// The cookie's name.
    static let cookieName = "chappie_sign_in"

    /// What the listener answers the browser: the start URL once (a cookie and a redirect to the
    /// authorize URL; a second fetch ends the sign-in), then only `/auth/callback` with our `state`
    /// and our cookie.
    private static func answer(
        _ request: LoopbackCallbackServer.Request, state: String, secrets: Secrets, authorizeURL: URL?
    ) -> LoopbackCallbackServer.Answer {
        if request.path == secrets.startPath, let authorizeURL {
            let fetches = secrets.starts.withLock { count in
                count += 1
                return count
            }
            guard fetches == 1 else {
                return .init(
                    status: 409,
                    message:
                        "This sign-in's start page was already opened once, perhaps by someone else: the sign-in is stopped. Start again from the terminal.",
                    deliver: true)
            }
            return .init(
                status: 302, message: "Continue to sign in.", deliver: false, location: authorizeURL.absoluteString,
                setCookie: "\(cookieName)=\(secrets.cookie); Path=/auth/callback; HttpOnly; SameSite=Lax; Max-Age=1800")
        }
        guard request.path == "/auth/callback" else { return .init(status: 404, message: "Not found.", deliver: false) }
        guard request.query["state"] == state else {
            return .init(
                status: 400,
                message: "This sign-in was not started by the chappie waiting here (its state does not match). Start again from the terminal.",
                deliver: false)
        }
        guard request.cookies[cookieName] == secrets.cookie else {
            return .init(
                status: 400,
                message:
                    "This callback did not come from the browser that started the sign-in (its cookie is missing). Start again from the terminal.",
                deliver: false)
        }
        if let error = request.query["error"] {
            return .init(
                status: 200, message: "The sign-in was refused (\(request.query["error_description"] ?? error)). You can close this tab.",
                deliver: true)
        }
        return .init(status: 200, message: "chappie has the sign-in. You can close this tab and go back to the terminal.", deliver: true)
    }
}

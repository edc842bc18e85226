package import ChappieCore
package import ChappieNet
import ChappieStore
package import Foundation

/// The issuer's endpoints, spoken exactly as docs/protocol.md §1 and §3 describe them.
package struct OAuthClient: Sendable {
    /// The Codex CLI's OAuth client id.
    package static let clientID = "app_EMoamEEZ73f0CkXaXp7hrann"

    /// A user code to show, from `POST /api/accounts/deviceauth/usercode`.
    package struct DeviceCode: Sendable {
        /// The opaque id to poll with.
        package var deviceAuthID: String
        /// The code the user types.
        package var userCode: String
        /// How often to poll (at least one second).
        package var interval: Duration
        /// How long the code lives, as the server said: its `expires_at` less its `Date` (so a
        /// local clock that is off does not matter); `nil` when it did not say.
        package var lifetime: Duration?
    }

    /// The server's answer to one poll.
    package enum PollResult: Sendable {
        /// Not approved yet; `slowDown` asks for a longer interval.
        case pending(slowDown: Bool)
        /// Approved: the authorization code and the server-made PKCE verifier.
        case approved(authorizationCode: String, codeVerifier: String)
    }

    /// Tokens from a refresh; each field is optional (Codex keeps the old value for a missing one).
    /// Prints redacted.
    package struct RefreshedTokens: Sendable, RedactedDescription {
        /// A new id_token, if sent.
        package var idToken: String?
        /// A new access_token, if sent.
        package var accessToken: String?
        /// The rotated refresh_token, if sent.
        package var refreshToken: String?

        /// Which tokens came, none shown.
        package var redactedFields: KeyValuePairs<String, String> {
            func shown(_ token: String?) -> String { token == nil ? "nil" : redactedMarker }
            return ["idToken": shown(idToken), "accessToken": shown(accessToken), "refreshToken": shown(refreshToken)]
        }
    }

    /// The endpoints.
    package let endpoints: ChappieEndpoints
    /// The HTTP client.
    package let http: ChappieHTTPClient
    /// How long the code exchange after approval (the sign-in's callback step) may take before it
    /// fails with `callbackTimeout`; every other request has 30 seconds. Default: 30 seconds.
    package var exchangeTimeout: Duration

    /// Creates a client.
    package init(endpoints: ChappieEndpoints, http: ChappieHTTPClient, exchangeTimeout: Duration = .seconds(30)) {
        self.endpoints = endpoints
        self.http = http
        self.exchangeTimeout = exchangeTimeout
    }

    /// Asks for a device code (§1.1).
    package func requestDeviceCode() async throws(ChappieAuthError) -> DeviceCode {
        let response = try await send(json: ["client_id": Self.clientID], to: endpoints.deviceUserCodeURL)
        if response.status == 404 {
            throw .authorizationDenied(
                "device-code sign-in is not enabled: turn on \"device code authorization for Codex\" in ChatGPT Settings → Security (a workspace admin may have to allow it), or sign in through the browser (chappie accounts add --browser)"
            )
        }
        guard response.isSuccess else { throw Self.failure(response) }
        return try Self.deviceCode(from: response.body, serverDate: response.headers["Date"].flatMap { ChappieHTTPHeaders.httpDate($0) } ?? Date())
    }

    /// Reads a usercode reply (§1.1); `serverDate` is the reply's `Date`, which the lifetime counts from.
    package static func deviceCode(from body: Data, serverDate: Date) throws(ChappieAuthError) -> DeviceCode {
        guard let object = Self.object(body), let id = object["device_auth_id"] as? String,
            let code = (object["user_code"] ?? object["usercode"]) as? String
        else { throw .invalidResponse }
        // `interval` is a string holding an integer on the real service; accept a number too. 0 or
        // missing would mean "no sleep", a huge one never polling again: clamp to 1–60 seconds.
        let seconds = min(60, WireNumber.integer(object["interval"], in: 0...Int(Int32.max)) ?? 5)
        let expiresAt = (object["expires_at"] as? String).flatMap(WireNumber.date(iso8601:))
        let lifetime = expiresAt.map {
            Duration.milliseconds(Int64(min(Double(WireNumber.longestSeconds), max(0, $0.timeIntervalSince(serverDate))) * 1000))
        }
        return DeviceCode(deviceAuthID: id, userCode: code, interval: .seconds(max(1, seconds)), lifetime: lifetime)
    }

    /// Whether a poll's error code says the user refused the code: RFC 8628's `access_denied`, or
    /// any code ending in `denied` or `declined` (the `deviceauth_` forms a refusal may take are
    /// unconfirmed, docs/emulator.md). Any other 403 or 404 is still pending.
    static func isRefusal(_ code: String) -> Bool {
        code == "access_denied" || code.hasSuffix("denied") || code.hasSuffix("declined")
    }

    /// Polls once (§1.3): 403 and 404 are pending; 2xx carries the code.
    ///
    /// Whatever the status, an error code that says the code expired
    /// (`deviceauth_user_code_expired`, as the service sends it, or another `…expired…` form) or
    /// that the server does not know it (`deviceauth_not_found`) is `.expiredDeviceCode`: polling
    /// on cannot succeed, and a new code is the way on. A refusal (``isRefusal(_:)``) is
    /// `.authorizationDenied`.
    package func poll(_ code: DeviceCode) async throws(ChappieAuthError) -> PollResult {
        let response = try await send(json: ["device_auth_id": code.deviceAuthID, "user_code": code.userCode], to: endpoints.deviceTokenURL)
        if !response.isSuccess {
            let error = OAuthErrorBody(response.body)
            if let code = error.code {
                if code.contains("expired") || code == "deviceauth_not_found" { throw .expiredDeviceCode }
                if Self.isRefusal(code) {
                    throw .authorizationDenied(error.description ?? code)
                }
            }
            if response.status == 403 || response.status == 404 { return .pending(slowDown: error.code == "slow_down") }
            throw Self.failure(response)
        }
        return try Self.approval(from: response.body)
    }

    /// Reads an approved poll's reply (§1.3).
    package static func approval(from body: Data) throws(ChappieAuthError) -> PollResult {
        guard let object = Self.object(body), let authorizationCode = object["authorization_code"] as? String,
            let verifier = object["code_verifier"] as? String
        else { throw .invalidResponse }
        return .approved(authorizationCode: authorizationCode, codeVerifier: verifier)
    }

    /// Exchanges the authorization code for tokens, form-encoded (§1.4): with the device flow's
    /// `redirect_uri` unless the browser flow gives its loopback one (§2).
    package func exchange(authorizationCode: String, codeVerifier: String, redirectURI: String? = nil) async throws(ChappieAuthError) -> Credentials {
        let form = [
            ("grant_type", "authorization_code"), ("code", authorizationCode),
            ("redirect_uri", redirectURI ?? endpoints.issuer.absoluteString + "/deviceauth/callback"),
            ("client_id", Self.clientID), ("code_verifier", codeVerifier),
        ].map { "\($0.0)=\(Self.formEncode($0.1))" }.joined(separator: "&")
        var request = ChappieHTTPRequest(url: endpoints.tokenURL, method: .post, headers: ["Content-Type": "application/x-www-form-urlencoded"])
        request.body = Data(form.utf8)
        request.bodyCarriesCredentials = true
        request.totalTimeout = exchangeTimeout
        let response = try await execute(request, timedOut: .callbackTimeout)
        guard response.isSuccess else { throw Self.failure(response) }
        return try Self.exchangedTokens(from: response.body)
    }

    /// Reads a code exchange's reply (§1.4): all three tokens, the refresh token not empty.
    package static func exchangedTokens(from body: Data) throws(ChappieAuthError) -> Credentials {
        guard let object = Self.object(body), let id = object["id_token"] as? String, let access = object["access_token"] as? String
        else { throw .invalidResponse }
        guard let refresh = object["refresh_token"] as? String, !refresh.isEmpty else { throw .missingRefreshToken }
        return Credentials(idToken: id, accessToken: access, refreshToken: refresh)
    }

    /// Redeems a refresh token with a JSON body (§3.1). Each refresh token works once: once sent,
    /// the answer is awaited for ``RefreshBounds/answerTimeout`` (120 s), not the 30 s of other
    /// requests, since the issuer may already have rotated the token.
    package func refresh(_ refreshToken: String) async throws(ChappieAuthError) -> RefreshedTokens {
        let response = try await send(
            json: ["client_id": Self.clientID, "grant_type": "refresh_token", "refresh_token": refreshToken], to: endpoints.tokenURL,
            carriesCredentials: true, timeout: RefreshBounds.answerTimeout)
        guard response.isSuccess else { throw Self.failure(response) }
        return try Self.refreshedTokens(from: response.body)
    }

    /// Reads a refresh's reply (§3.1): each token optional.
    package static func refreshedTokens(from body: Data) throws(ChappieAuthError) -> RefreshedTokens {
        guard let object = Self.object(body) else { throw .invalidResponse }
        return RefreshedTokens(
            idToken: object["id_token"] as? String, accessToken: object["access_token"] as? String,
            refreshToken: object["refresh_token"] as? String)
    }

    /// Revokes a refresh token at the issuer (§3.5): the token and the tokens issued with it stop
    /// working.
    ///
    /// - Throws: ``ChappieAuthError``: `.networkFailure`, or `.tokenExchangeFailed` with the
    ///   issuer's answer when it is not a 2xx.
    package func revoke(refreshToken: String) async throws(ChappieAuthError) {
        let response = try await send(
            json: ["token": refreshToken, "token_type_hint": "refresh_token", "client_id": Self.clientID], to: endpoints.revokeURL,
            carriesCredentials: true)
        guard response.isSuccess else { throw Self.failure(response) }
    }

    // MARK: Wire helpers

    private func send(
        json: [String: String], to url: URL, carriesCredentials: Bool = false, timeout: Duration? = nil
    ) async throws(ChappieAuthError) -> ChappieHTTPResponse {
        var request = ChappieHTTPRequest(url: url, method: .post, headers: ["Content-Type": "application/json", "Accept": "application/json"])
        request.body = try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
        request.bodyCarriesCredentials = carriesCredentials
        request.totalTimeout = timeout
        request.idleTimeout = timeout
        return try await execute(request)
    }

    /// Sends a request (30 seconds unless it sets its own limit); a timeout is `timedOut` when given.
    private func execute(_ request: ChappieHTTPRequest, timedOut: ChappieAuthError? = nil) async throws(ChappieAuthError) -> ChappieHTTPResponse {
        var request = request
        request.totalTimeout = request.totalTimeout ?? .seconds(30)
        do {
            return try await http.execute(request)
        } catch is CancellationError {
            throw .cancelledSignIn
        } catch let error as ChappieHTTPClientError where error.code == .timedOut && timedOut != nil {
            throw timedOut ?? .networkFailure("\(error)")
        } catch let error as ChappieHTTPClientError where error.code == .libraryUnavailable {
            // Not the network's fault, and trying again will not help until it is installed.
            throw .unknown(error.message)
        } catch {
            throw .networkFailure("\(error)")
        }
    }

    private static func object(_ body: Data) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    }

    /// The failure for a non-2xx answer: its status and its body, token-like values redacted; a
    /// 429's or 5xx's `Retry-After` is kept for the error's recovery.
    static func failure(_ response: ChappieHTTPResponse) -> ChappieAuthError {
        let body = OAuthErrorBody.redacted(response.body)
        let waits = response.status == 429 || response.status >= 500
        let retryAfter = waits ? response.headers["Retry-After"].flatMap { ChappieHTTPHeaders.retryAfter($0) } : nil
        return .tokenExchangeFailed(statusCode: response.status, body: ChappieAuthError.body(body, retryAfter: retryAfter))
    }

    /// A value percent-encoded for a form or a query: everything but letters, digits and `-._~`.
    static func formEncode(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}

import Foundation

/// The issuer's endpoints (auth.openai.com): device code, token, revoke, discovery (§1, §3).
struct IssuerRoutes: Sendable {
    let state: EmulatorState

    /// `GET /.well-known/openid-configuration`: the issuer's discovery document.
    func discovery(origin: String) -> Reply {
        .json(
            200,
            .object([
                ("issuer", .string(origin)),
                ("authorization_endpoint", .string(origin + "/oauth/authorize")),
                ("token_endpoint", .string(origin + "/oauth/token")),
                ("revocation_endpoint", .string(origin + "/oauth/revoke")),
                ("jwks_uri", .string(origin + "/.well-known/jwks.json")),
                ("response_types_supported", .array([.string("code")])),
                ("grant_types_supported", .array(["authorization_code", "refresh_token"].map(JSON.string))),
                ("code_challenge_methods_supported", .array([.string("S256")])),
            ]))
    }

    /// `POST /api/accounts/deviceauth/usercode` with `{"client_id"}` (§1.1).
    func userCode(_ fields: RequestFields?) async -> Reply {
        guard let fields else { return .openAIError(400, message: "Request body must be a JSON object.", code: "invalid_request") }
        guard fields.string("client_id") == OpenAIProtocol.clientID else {
            return .openAIError(400, message: "Unknown or missing client_id.", code: "invalid_client")
        }
        let (code, interval) = await state.createDeviceCode()
        let expiresAt = Date(timeIntervalSince1970: code.expiresAt)
        return .json(
            200,
            .object([
                ("device_auth_id", .string(code.deviceAuthID)),
                ("user_code", .string(code.userCode)),
                ("interval", .string(String(interval))),
                ("expires_at", .string(expiresAt.formatted(.iso8601))),
            ]))
    }

    /// `POST /api/accounts/deviceauth/token` with `{"device_auth_id","user_code"}` (§1.3).
    func pollToken(_ fields: RequestFields?) async -> Reply {
        guard let fields, let id = fields.string("device_auth_id"), let userCode = fields.string("user_code") else {
            return .openAIError(400, message: "device_auth_id and user_code are required.", code: "invalid_request")
        }
        switch await state.pollDeviceCode(deviceAuthID: id, userCode: userCode) {
        case .pending:
            return .openAIError(403, message: "Device authorization is pending.", code: "deviceauth_authorization_pending")
        case .approved(let authorizationCode, let challenge, let verifier):
            return .json(
                200,
                .object([
                    ("authorization_code", .string(authorizationCode)),
                    ("code_challenge", .string(challenge)),
                    ("code_verifier", .string(verifier)),
                ]))
        case .denied(let reason):
            // The real code for a refusal is not documented (docs/emulator.md): this one is a guess.
            return .openAIError(403, message: reason, code: "deviceauth_authorization_denied")
        case .expired:
            return .openAIError(
                403, message: "Device authorization code has expired. Please request a new code.", code: "deviceauth_user_code_expired")
        case .unknown:
            return .openAIError(404, message: "Device authorization not found.", code: "deviceauth_not_found")
        }
    }

    /// `POST /oauth/token`: the form-encoded code exchange (§1.4) and the JSON refresh (§3.1).
    func token(_ fields: RequestFields?, origin: String) async -> Reply {
        guard let fields else {
            return .oauthError(400, error: "invalid_request", description: "Body must be JSON or a form.")
        }
        guard fields.string("client_id") == OpenAIProtocol.clientID else {
            return .oauthError(401, error: "invalid_client", description: "Unknown or missing client_id.")
        }
        switch fields.string("grant_type") {
        case "authorization_code":
            guard let code = fields.string("code"), let verifier = fields.string("code_verifier"),
                let redirectURI = fields.string("redirect_uri")
            else {
                return .oauthError(400, error: "invalid_request", description: "code, code_verifier and redirect_uri are required.")
            }
            let deviceCallbacks = [OpenAIProtocol.realIssuer, origin].map { $0 + OpenAIProtocol.deviceCallbackPath }
            switch await state.exchange(
                code: code, verifier: verifier, redirectURI: redirectURI, deviceRedirectAllowed: deviceCallbacks.contains(redirectURI), issuer: origin
            )
            {
            case .tokens(let tokens):
                return .json(
                    200,
                    .object([
                        ("id_token", .string(tokens.idToken)),
                        ("access_token", .string(tokens.accessToken)),
                        ("refresh_token", .string(tokens.refreshToken)),
                        ("expires_in", .int(tokens.expiresIn)),
                        ("token_type", .string("Bearer")),
                        ("scope", .string("openid profile email offline_access")),
                    ]))
            case .invalidGrant(let description):
                return .oauthError(400, error: "invalid_grant", description: description)
            }
        case "refresh_token":
            guard let token = fields.string("refresh_token") else {
                return .oauthError(400, error: "invalid_request", description: "refresh_token is required.")
            }
            switch await state.refresh(token: token, issuer: origin) {
            case .tokens(let tokens):
                return .json(
                    200,
                    .object([
                        ("id_token", .string(tokens.idToken)),
                        ("access_token", .string(tokens.accessToken)),
                        ("refresh_token", .string(tokens.refreshToken)),
                    ]))
            case .reused:
                return .openAIError(
                    401,
                    message: "Your refresh token has already been used to generate a new access token. Please try signing in again.",
                    code: "refresh_token_reused")
            case .expired:
                return .openAIError(401, message: "Your refresh token has expired. Please try signing in again.", code: "refresh_token_expired")
            case .revoked, .unknown:
                return .oauthError(401, error: "refresh_token_invalidated", description: "The refresh token was revoked.")
            }
        default:
            return .oauthError(400, error: "unsupported_grant_type", description: "grant_type must be authorization_code or refresh_token.")
        }
    }

    /// `GET /oauth/authorize?…` (§2): checks the request as the real issuer would, then approves at
    /// once (the user's sign-in and consent are skipped) with a `302` to the loopback callback
    /// carrying `code` and `state`, or `error` and `error_description` when a refusal was queued.
    /// Any loopback port is accepted (the real issuer allows 1455 and 1457), so tests can run side by side.
    func authorize(query: [String: String]) async -> Reply {
        func refuse(_ message: String) -> Reply {
            Reply(status: 400, headers: [("Content-Type", "text/plain; charset=utf-8")], body: .bytes(Data((message + "\n").utf8)))
        }
        guard query["client_id"] == OpenAIProtocol.clientID else { return refuse("Unknown or missing client_id.") }
        guard let redirectURI = query["redirect_uri"], let redirect = URLComponents(string: redirectURI), redirect.scheme == "http",
            ["localhost", "127.0.0.1"].contains(redirect.host ?? ""), redirect.port != nil, redirect.path == "/auth/callback"
        else { return refuse("redirect_uri must be http://localhost:PORT/auth/callback.") }
        guard query["response_type"] == "code" else { return refuse("response_type must be code.") }
        guard query["code_challenge_method"] == "S256", let challenge = query["code_challenge"], challenge.count >= 43 else {
            return refuse("A PKCE code_challenge with code_challenge_method=S256 is required.")
        }
        guard let state = query["state"], !state.isEmpty else { return refuse("state is required.") }
        guard (query["scope"] ?? "").split(separator: " ").contains("offline_access") else { return refuse("scope must include offline_access.") }
        var items = [URLQueryItem]()
        switch await self.state.authorize(challenge: challenge, redirectURI: redirectURI) {
        case .approved(let code): items = [URLQueryItem(name: "code", value: code)]
        case .denied(let error, let description):
            items = [URLQueryItem(name: "error", value: error), URLQueryItem(name: "error_description", value: description)]
        }
        var location = redirect
        location.queryItems = items + [URLQueryItem(name: "state", value: state)]
        return Reply(status: 302, headers: [("Location", location.string ?? redirectURI)], body: .bytes(Data()))
    }

    /// `POST /oauth/revoke` with `{"token","token_type_hint","client_id"?}` (§3.5).
    func revoke(_ fields: RequestFields?) async -> Reply {
        guard let fields, let token = fields.string("token") else {
            return .oauthError(400, error: "invalid_request", description: "token is required.")
        }
        await state.revoke(token: token)
        return .json(200, .object([]))
    }
}

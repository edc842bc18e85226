import ChappieNet
import Foundation

/// The Codex CLI's client id, which the emulator (like the real issuer) requires.
public let codexClientID = "app_EMoamEEZ73f0CkXaXp7hrann"

/// Tokens from a sign-in or a refresh, as the emulator returned them.
public struct IssuedTokens: Sendable {
    /// The id_token JWT.
    public var idToken: String
    /// The access_token JWT.
    public var accessToken: String
    /// The rotating refresh token.
    public var refreshToken: String
}

extension RunningEmulator {
    /// Runs the whole device-code sign-in (usercode, approval through the control API, poll, code
    /// exchange) and returns the tokens.
    public func signIn(email: String? = nil, plan: String? = nil, accountID: String? = nil) async throws -> IssuedTokens {
        let start = try await json(
            request(
                "/api/accounts/deviceauth/usercode", method: .post, json: #"{"client_id":"\#(codexClientID)"}"#)
        ).json
        let deviceAuthID = try require(start.string("device_auth_id"), "device_auth_id")
        let userCode = try require(start.string("user_code"), "user_code")
        var approval = ["user_code": userCode]
        approval["email"] = email
        approval["plan"] = plan
        approval["account_id"] = accountID
        let approved = try await json(request("/_emulator/device/approve", method: .post, json: Self.encode(approval)))
        guard approved.status == 200 else { throw EmulatorHarnessError(message: "approval answered \(approved.status)") }
        let poll = try await json(
            request(
                "/api/accounts/deviceauth/token", method: .post,
                json: Self.encode(["device_auth_id": deviceAuthID, "user_code": userCode]))
        ).json
        let form = [
            "grant_type=authorization_code",
            "code=" + Self.formEncode(try require(poll.string("authorization_code"), "authorization_code")),
            "redirect_uri=" + Self.formEncode("https://auth.openai.com/deviceauth/callback"),
            "client_id=" + codexClientID,
            "code_verifier=" + Self.formEncode(try require(poll.string("code_verifier"), "code_verifier")),
        ].joined(separator: "&")
        let tokens = try await json(request("/oauth/token", method: .post, form: form)).json
        return IssuedTokens(
            idToken: try require(tokens.string("id_token"), "id_token"),
            accessToken: try require(tokens.string("access_token"), "access_token"),
            refreshToken: try require(tokens.string("refresh_token"), "refresh_token"))
    }

    /// Redeems a refresh token with the JSON body Codex sends (§3.1).
    public func refresh(_ refreshToken: String) async throws -> (status: Int, json: JSONDocument) {
        try await json(
            request(
                "/oauth/token", method: .post,
                json: Self.encode(["client_id": codexClientID, "grant_type": "refresh_token", "refresh_token": refreshToken])))
    }

    /// JSON text for a flat string dictionary.
    public static func encode(_ object: [String: String]) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// `application/x-www-form-urlencoded` encoding of one value.
    public static func formEncode(_ value: String) -> String {
        value.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")) ?? value
    }

    private func require<T>(_ value: T?, _ name: String) throws -> T {
        guard let value else { throw EmulatorHarnessError(message: "the emulator's reply had no \(name)") }
        return value
    }
}

/// The claims of a JWT, decoded without checking the signature (as chappie and Codex do).
public func jwtClaims(_ token: String) -> JSONDocument {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3 else { return JSONDocument(Data()) }
    var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
    return JSONDocument(Data(base64Encoded: base64) ?? Data())
}

/// Where two JSON documents differ in shape: keys missing or extra, and values of another kind.
///
/// Numbers match numbers and `null` matches only `null`; array elements are compared with the
/// first element of the other side.
public func shapeDifferences(_ actual: Any?, _ expected: Any?, path: String = "$") -> [String] {
    func kind(_ value: Any?) -> String {
        switch value {
        case nil: "missing"
        case is NSNull: "null"
        case is Bool where "\(type(of: value!))".contains("Bool"): "bool"
        case is NSNumber: "number"
        case is String: "string"
        case is [Any]: "array"
        case is [String: Any]: "object"
        default: "other"
        }
    }
    switch (actual, expected) {
    case (let actual as [String: Any], let expected as [String: Any]):
        var differences: [String] = []
        for key in Set(expected.keys).subtracting(actual.keys).sorted() { differences.append("\(path).\(key) missing") }
        for key in Set(actual.keys).subtracting(expected.keys).sorted() { differences.append("\(path).\(key) extra") }
        for key in Set(actual.keys).intersection(expected.keys).sorted() {
            differences += shapeDifferences(actual[key], expected[key], path: "\(path).\(key)")
        }
        return differences
    case (let actual as [Any], let expected as [Any]):
        guard let first = actual.first, let model = expected.first else { return [] }
        return shapeDifferences(first, model, path: "\(path)[0]")
    default:
        let (a, e) = (kind(actual), kind(expected))
        return a == e ? [] : ["\(path) is \(a), expected \(e)"]
    }
}

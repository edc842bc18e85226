public import Foundation

/// Unsigned JWTs with the real claim layout, for tests that need tokens of their own.
public enum TestTokens {
    /// A compact JWT whose payload is `claims` (the signature is a placeholder; chappie never checks it).
    public static func jwt(_ claims: [String: Any]) -> String {
        func encode(_ object: Any) -> String {
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            return data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return encode(["alg": "RS256", "typ": "JWT"]) + "." + encode(claims) + ".c2lnbmF0dXJl"
    }

    /// An id_token for an account.
    public static func idToken(email: String, accountID: String, userID: String, plan: String = "plus", fedramp: Bool = false) -> String {
        jwt([
            "email": email, "iat": 1_795_000_000, "exp": 1_795_003_600,
            "https://api.openai.com/auth": [
                "chatgpt_plan_type": plan, "chatgpt_account_id": accountID, "chatgpt_user_id": userID,
                "user_id": userID, "chatgpt_account_is_fedramp": fedramp,
            ],
        ])
    }

    /// An access token expiring at `expiresAt`.
    public static func accessToken(accountID: String, expiresAt: Date, marker: String = "") -> String {
        jwt([
            "exp": Int(expiresAt.timeIntervalSince1970), "iat": Int(Date().timeIntervalSince1970), "marker": marker,
            "https://api.openai.com/auth": ["chatgpt_account_id": accountID],
        ])
    }

    /// A Codex `auth.json` body for an account, with distinctive tokens (`marker` appears in each).
    public static func codexAuthJSON(email: String, accountID: String, userID: String, plan: String = "plus", marker: String) -> Data {
        let object: [String: Any] = [
            "auth_mode": "chatgpt",
            "OPENAI_API_KEY": NSNull(),
            "tokens": [
                "id_token": idToken(email: email, accountID: accountID, userID: userID, plan: plan),
                "access_token": accessToken(accountID: accountID, expiresAt: Date().addingTimeInterval(3600), marker: marker),
                "refresh_token": "rt_\(marker)_refresh",
                "account_id": accountID,
            ],
            "last_refresh": "2026-11-20T09:30:12.123456Z",
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) ?? Data()
    }

    /// A new empty temporary directory (mode 0700).
    public static func temporaryDirectory(_ prefix: String = "chappie-test") throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }
}

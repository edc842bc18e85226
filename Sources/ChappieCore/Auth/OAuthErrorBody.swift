public import Foundation

/// An error body from the issuer (openai-protocol.md §3.2): OAuth's `{"error":"code",
/// "error_description":…}` or OpenAI's `{"error":{"code","message"}}`, read without trusting it.
public struct OAuthErrorBody: Sendable, Hashable {
    /// The error code, lower-cased: `error` as a string, else `error.code`, else `code`.
    public let code: String?
    /// `error_description`, else `error.message`.
    public let description: String?

    /// Reads a body; a body that is not a JSON object has neither code nor description.
    public init(_ body: Data) {
        let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        code = ((object?["error"] as? String) ?? (error?["code"] as? String) ?? (object?["code"] as? String))?.lowercased()
        description = object?["error_description"] as? String ?? error?["message"] as? String
    }

    /// `code: description`, or what the body is when it has no code (a proxy's HTML page, an empty
    /// body): the form chappie shows and keeps as an account's last error.
    public func summary(bodySize: Int) -> String {
        let summary = code.map { [$0, description].compactMap { $0 }.joined(separator: ": ") }
            ?? "no error code in the response (\(bodySize) bytes)" + (description.map { ": \($0)" } ?? "")
        return String(summary.prefix(300))
    }

    /// The body as text to keep in an error, at most 2,000 characters, with every token-like value
    /// replaced by `<redacted>`: the JSON members that carry tokens or codes (`…token`,
    /// `authorization_code`, `device_code`, `code_verifier`; not the error's `code`), and anything
    /// shaped like a JWT.
    public static func redacted(_ body: Data) -> String {
        var text = String(decoding: body.prefix(2000), as: UTF8.self)
        for (pattern, template) in [
            (#""((?:[A-Za-z_]*_)?token|authorization_code|device_code|code_verifier)"\s*:\s*"[^"]*""#, "\"$1\":\"\(redactedMarker)\""),
            (#"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"#, redactedMarker),
        ] {
            guard let expression = try? NSRegularExpression(pattern: pattern) else { continue }
            // The marker holds no `$` or backslash, so it reads the same as a template.
            text = expression.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: template)
        }
        return text
    }
}

public import Foundation

/// An error body from the issuer (openai-protocol.md §3.2): OAuth's `{"error":"code",
/// "error_description":…}` or OpenAI's `{"error":{"code","message"}}`, read without trusting it.
public struct OAuthErrorBody: Sendable, Hashable {
    /// The error code, lower-cased: `error` as a string, else `error.code`, else `code`. Only a JSON
    /// body has one: a plain-text or HTML body (a proxy's) never reads as an OAuth error.
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

    /// The longest body an error keeps, in characters.
    public static let keptLength = 2000

    /// The body as text to keep in an error, with every token-like value replaced by `<redacted>`
    /// first, then cut to ``keptLength`` characters. A longer body that carries an OAuth code is kept
    /// as `{"error":…,"error_description":…}` instead, so the cut never loses the code.
    ///
    /// Redacted: JSON members whose name ends in `token` (any case: `refresh_token`, `accessToken`),
    /// `authorization_code`, `device_code` and `code_verifier` (not the error's `code`); form fields
    /// `…token=`, `code=` and `code_verifier=`; anything shaped like a JWT.
    public static func redacted(_ body: Data) -> String {
        let parsed = OAuthErrorBody(body)
        var text = String(decoding: body, as: UTF8.self)
        if text.count > keptLength, let code = parsed.code {
            var compact: [String: String] = ["error": code]
            compact["error_description"] = parsed.description
            text = (try? JSONSerialization.data(withJSONObject: compact, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? code
        }
        for (pattern, template) in redactions {
            text = pattern.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: template)
        }
        return String(text.prefix(keptLength))
    }

    /// The patterns and their templates (the marker holds no `$` or backslash, so it reads the same
    /// as a template).
    private static let redactions: [(NSRegularExpression, String)] = [
        (#"(?i)"([a-z_]*token|authorization_code|device_code|code_verifier)"\s*:\s*"(?:\\.|[^"\\])*("|$)"#, "\"$1\":\"\(redactedMarker)\""),
        (#"(?i)\b([a-z_]*token|code|code_verifier)=[^&\s"<]+"#, "$1=\(redactedMarker)"),
        (#"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"#, redactedMarker),
    ].compactMap { pattern, template in (try? NSRegularExpression(pattern: pattern)).map { ($0, template) } }
}

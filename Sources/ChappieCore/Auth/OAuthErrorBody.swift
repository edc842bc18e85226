public import Foundation

/// An error body from the issuer (docs/protocol.md §3.2): OAuth's `{"error":"code",
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
        let summary =
            code.map { [$0, description].compactMap { $0 }.joined(separator: ": ") }
            ?? "no error code in the response (\(bodySize) bytes)" + (description.map { ": \($0)" } ?? "")
        return String(summary.prefix(300))
    }

    /// The longest body an error keeps, in characters.
    public static let keptLength = 2000

    /// The body as text to keep in an error, with every token-like value replaced by `<redacted>`,
    /// at most ``keptLength`` characters. A longer body that carries an OAuth code is kept as
    /// `{"error":…,"error_description":…}` (the description cut to 1,500 characters) so that it
    /// still parses; a longer body without one is cut.
    ///
    /// Redacted: JSON members whose name ends in `token` (any case: `refresh_token`, `accessToken`),
    /// `authorization_code`, `device_code` and `code_verifier` (not the error's `code`); form fields
    /// `…token=`, `code=`, `authorization_code=`, `device_code=` and `code_verifier=` (up to a
    /// backslash, so an escaped quote survives); anything shaped like a JWT.
    public static func redacted(_ body: Data) -> String {
        let text = redact(String(decoding: body, as: UTF8.self))
        guard text.count > keptLength else { return text }
        // Too long: keep a compact form that still parses, when there is a code to keep.
        let parsed = OAuthErrorBody(body)
        guard let code = parsed.code else { return String(text.prefix(keptLength)) }
        var compact: [String: String] = ["error": String(code.prefix(200))]
        compact["error_description"] = parsed.description.map { redact(String($0.prefix(1500))) }
        return (try? JSONSerialization.data(withJSONObject: compact, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// `text` with every match of ``redactions`` replaced.
    private static func redact(_ text: String) -> String {
        var text = text
        for (pattern, template) in redactions {
            text = pattern.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: template)
        }
        return text
    }

    /// The patterns and their templates (the marker holds no `$` or backslash, so it reads the same
    /// as a template).
    private static let redactions: [(NSRegularExpression, String)] = [
        (#"(?i)"([a-z_]*token|authorization_code|device_code|code_verifier)"\s*:\s*"(?:\\.|[^"\\])*("|$)"#, "\"$1\":\"\(redactedMarker)\""),
        (#"(?i)\b([a-z_]*token|(?:authorization_|device_)?code|code_verifier)=[^&\s"<\\]+"#, "$1=\(redactedMarker)"),
        (#"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"#, redactedMarker),
    ].compactMap { pattern, template in (try? NSRegularExpression(pattern: pattern)).map { ($0, template) } }
}

import ChappieText

/// Text for an HTML or XML page: chappie's usage report and dashboard, and the sign-in callback's
/// answer.
package enum HTMLText {
    /// Text made safe for HTML and XML: `&`, `<`, `>`, `"` and `'` escaped, and control characters
    /// (which XML 1.0 does not allow, and a terminal showing the page's source would obey) and the
    /// noncharacters U+FFFE and U+FFFF left out; line breaks and tabs become spaces.
    package static func escaped(_ text: String) -> String {
        var escaped = ""
        for character in TerminalText.sanitized(text).filter({ $0 != "\u{FFFE}" && $0 != "\u{FFFF}" }) {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

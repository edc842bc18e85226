/// Text for an HTML or XML page: chappie's usage report and dashboard, and the sign-in callback's
/// answer.
public enum HTMLText {
    /// Text made safe for HTML and XML: `&`, `<`, `>`, `"` and `'` escaped.
    public static func escaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
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

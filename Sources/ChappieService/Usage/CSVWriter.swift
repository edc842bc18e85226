import ChappieText
import ChappieCore
import Foundation

/// RFC 4180 CSV: fields with a comma, a double quote, CR or LF are quoted, quotes doubled, lines
/// end with CRLF. Fields with leading or trailing white space are quoted too, since some readers
/// trim unquoted ones.
public enum CSVWriter {
    /// One record, with its CRLF.
    public static func record(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }

    /// A text field that a spreadsheet would take for a formula (it begins with `=`, `+`, `-`, `@`,
    /// a tab or a CR) gets a leading `'`, so that opening the report never runs a formula an e-mail
    /// or plan name from a server put there. Numbers are never text fields, so a negative number
    /// keeps its sign.
    public static func neutralized(_ text: String) -> String {
        guard let first = text.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) else { return text }
        return "'" + text
    }

    /// One field, quoted when it must be. Control characters from outside (an e-mail holding ESC)
    /// are left out, so that no field changes a terminal that shows the file; tabs and line breaks,
    /// which quoting carries, stay.
    public static func field(_ value: String) -> String {
        let value = String(
            String.UnicodeScalarView(
                value.unicodeScalars.filter { scalar in
                    !TerminalText.isControl(scalar) || "\t\r\n".unicodeScalars.contains(scalar)
                }))
        let special = value.contains { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }
        let padded = value.first?.isWhitespace == true || value.last?.isWhitespace == true
        guard special || padded else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

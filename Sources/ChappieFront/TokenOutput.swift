import Glibc

/// `token`'s output, byte for byte as the full binary prints it: the token and a line break, or
/// with `--json` Foundation's pretty-printed, key-sorted document. Text that the full binary
/// would sanitize or escape is not printed here (`nil`): the full binary prints it.
enum TokenOutput {
    /// What goes to standard output and standard error.
    static func render(_ token: FrontToken, json: Bool) -> (stdout: String, stderr: String)? {
        guard isPlain(token.accessToken), isPlain(token.name), token.chatgptAccountID.map(isPlain) ?? true, token.warning.map(isPlain) ?? true
        else { return nil }
        let stderr = token.warning.map { "warning: \($0)\n" } ?? ""
        guard json else { return (token.accessToken + "\n", stderr) }
        var members = [#""accessToken" : "\#(token.accessToken)""#, #""account" : "\#(token.name)""#]
        if let id = token.chatgptAccountID { members.append(#""chatgptAccountID" : "\#(id)""#) }
        if let expiry = token.expiresAt {
            guard let time = iso8601(expiry) else { return nil }
            members.append(#""expiresAt" : "\#(time)""#)
        }
        members.append(#""fedramp" : \#(token.fedramp)"#)
        if let warning = token.warning { members.append(#""warning" : "\#(warning)""#) }
        return ("{\n" + members.map { "  " + $0 }.joined(separator: ",\n") + "\n}\n", stderr)
    }

    /// Printable ASCII without a quote or backslash: the same on a terminal, sanitized or not, and
    /// in JSON, escaped or not.
    static func isPlain(_ text: String) -> Bool {
        text.utf8.allSatisfy { (0x20...0x7E).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }

    /// `2026-11-26T16:38:42Z`, as Foundation's `.iso8601` date strategy writes it.
    static func iso8601(_ seconds: Int64) -> String? {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return nil }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let year = String(parts.tm_year + 1900)
        return String(repeating: "0", count: max(0, 4 - year.count)) + year + "-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}

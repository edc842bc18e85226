import Foundation

/// Help as chappie shows it: a command's own options under `OPTIONS:`, then the options every
/// command takes under `GLOBAL OPTIONS:`. argument-parser puts titled groups before the untitled
/// options, so the heading is put in here, where the global block begins (`--home`, always first).
enum HelpLayout {
    static func grouped(_ help: String) -> String {
        var lines = help.components(separatedBy: "\n")
        guard lines.contains("OPTIONS:"), !lines.contains("GLOBAL OPTIONS:"),
            let start = lines.firstIndex(where: { $0.hasPrefix("  --home <dir>") })
        else { return help }
        // The command's own options, if any, keep their heading; an empty OPTIONS section goes.
        if lines[start - 1] == "OPTIONS:" {
            lines[start - 1] = "GLOBAL OPTIONS:"
        } else {
            lines.insert(contentsOf: ["", "GLOBAL OPTIONS:"], at: start)
        }
        return lines.joined(separator: "\n")
    }
}

/// Global options written before a subcommand (`chappie --home H accounts list`, `chappie config
/// --home H get codex-home`) moved after it, where every command's ``GlobalOptions`` reads them:
/// every global option before a `--` moves to just before it (or to the end), the other words keep
/// their order. What follows a `--` is another program's and never moves.
enum GlobalOptionHoisting {
    // Arrays, not sets: this runs on every start, and a Set's first use costs more than these few
    // comparisons (its generic metadata and conformances are looked up at run time).
    /// The global options that take a value.
    static let valued = ["--home", "--issuer", "--backend", "--key-file", "--store", "--machine", "--ca-file", "-o"]
    /// The global flags.
    static let flags = ["--json", "--verbose"]

    /// The arguments (without the program name) with their global options moved to the end, or to
    /// just before a `--`.
    static func reorder(_ arguments: [String]) -> [String] {
        let end = arguments.firstIndex(of: "--") ?? arguments.endIndex
        var moved: [String] = []
        var kept: [String] = []
        var index = arguments.startIndex
        while index < end {
            let argument = arguments[index]
            let name = String(argument.prefix { $0 != "=" })
            if flags.contains(argument) || (valued.contains(name) && argument.contains("=")) {
                moved.append(argument)
                index += 1
            } else if valued.contains(argument), index + 1 < end {
                moved += arguments[index...index + 1]
                index += 2
            } else {
                kept.append(argument)
                index += 1
            }
        }
        guard !moved.isEmpty else { return arguments }
        return kept + moved + Array(arguments[end...])
    }
}

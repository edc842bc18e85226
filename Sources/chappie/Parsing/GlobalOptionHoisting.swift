/// Global options written before the subcommand (`chappie --home H accounts list`) moved after it,
/// where every command's ``GlobalOptions`` reads them. Only the options before the first word that
/// is not an option move, to just before a `--` if there is one; nothing after the subcommand changes.
enum GlobalOptionHoisting {
    // Arrays, not sets: this runs on every start, and a Set's first use costs more than these few
    // comparisons (its generic metadata and conformances are looked up at run time).
    /// The global options that take a value.
    static let valued = ["--home", "--issuer", "--backend", "--key-file", "--store", "--machine"]
    /// The global flags.
    static let flags = ["--json", "--verbose"]

    /// The arguments (without the program name) with leading global options moved to the end.
    static func reorder(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            let name = String(argument.prefix { $0 != "=" })
            if flags.contains(argument) || (valued.contains(name) && argument.contains("=")) {
                leading.append(argument)
                index += 1
            } else if valued.contains(argument), index + 1 < arguments.endIndex {
                leading += arguments[index...index + 1]
                index += 2
            } else {
                break
            }
        }
        guard !leading.isEmpty, index < arguments.endIndex else { return arguments }
        // Before a `--`: what follows it is another program's (`chappie --json exec -- cmd`).
        let rest = arguments[index...]
        let end = rest.firstIndex(of: "--") ?? rest.endIndex
        return Array(rest[..<end]) + leading + Array(rest[end...])
    }
}

import ChappieText
import ArgumentParser
import ChappieCore

/// A mistyped command or subcommand (`chappie acounts list`, `accounts swich`), found before the
/// parser reads it as an unexpected argument: named, with the nearest real one.
enum CommandTypos {
    /// The message for the first word that is not a command where one must be, or `nil`.
    ///
    /// Only the words before any option are checked. Under a command with a default subcommand,
    /// which may take the word as its own argument (`usage NAME`), only a word one or two letters
    /// from a subcommand's name counts as a typo.
    static func problem(in arguments: [String], root: any ParsableCommand.Type) -> String? {
        var command = root
        var path = [root.configuration.commandName ?? "chappie"]
        var consumed: [String] = []
        for word in arguments {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, !word.hasPrefix("-"), !(command == root && word == "help") else { return nil }
            guard let next = subcommands.first(where: { names(of: $0).contains(word) }) else {
                // Habits from gh and kubectl: `chappie switch work`, `chappie login`.
                if command == root, let meant = habits[word] {
                    return "unknown command '\(word)' for 'chappie'. Did you mean '\(meant)'?"
                }
                let known = subcommands.flatMap(names)
                let nearest = known.map { ($0, distance($0, word)) }.filter { $0.1 <= max(1, word.count / 3) }.min { $0.1 < $1.1 }?.0
                // A word the default subcommand takes (`usage NAME`) is no command; one it refuses is
                // named as the unknown command it is, not as a mistake in the default's arguments.
                if let fallback = command.configuration.defaultSubcommand, nearest.map({ distance($0, word) > max(1, word.count / 4) }) ?? true {
                    let defaultName = fallback.configuration.commandName ?? ""
                    if (try? root.parseAsRoot(consumed + [defaultName, word])) != nil { return nil }
                }
                let printable = String(TerminalText.sanitized(word).prefix(40))
                return "unknown command '\(printable)' for '\(path.joined(separator: " "))'."
                    + (nearest.map { " Did you mean '\($0)'?" } ?? " Run '\(path.joined(separator: " ")) --help' for the commands.")
            }
            command = next
            consumed.append(word)
            path.append(next.configuration.commandName ?? word)
        }
        return nil
    }

    /// Root words other tools use, and the command chappie has for them.
    static let habits = [
        "login": "accounts add", "logout": "accounts remove", "switch": "accounts switch", "use": "accounts switch",
        "add": "accounts add", "remove": "accounts remove", "rm": "accounts remove", "ls": "accounts list", "list": "accounts list",
        "import": "accounts import", "whoami": "accounts current", "current": "accounts current",
    ]

    private static func names(of command: any ParsableCommand.Type) -> [String] {
        [command.configuration.commandName].compactMap { $0 } + command.configuration.aliases
    }

    /// The edit distance (insertions, deletions, substitutions) between two words.
    static func distance(_ a: String, _ b: String) -> Int {
        let (a, b) = (Array(a), Array(b))
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}

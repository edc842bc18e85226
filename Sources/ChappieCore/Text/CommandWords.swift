/// A command line written as one string (`--resume 'codex exec resume {session} go on'`, an alert
/// command) split into its words by a small part of the shell's quoting, so that it can be run
/// with no shell in between.
///
/// The rule, as docs/cli.md states it: blanks (space, tab, newline) separate words; `'…'` keeps
/// everything inside as it is; `"…"` keeps everything inside except that `\"` and `\\` stand for
/// `"` and `\`; outside quotes a backslash keeps the next character as it is. Nothing else is
/// special: no variables, `~`, globs, pipes or redirections. A user who wants those writes a shell:
/// `sh -c '…'`.
package enum CommandWords {
    /// Why a string is not a command line.
    package enum Problem: Error, Equatable, Sendable, CustomStringConvertible {
        /// A quote is opened and never closed.
        case unterminatedQuote(Character)
        /// The string ends with a backslash that escapes nothing.
        case trailingBackslash
        /// There is no word at all.
        case empty
        /// A NUL character, which no program's argument can hold.
        case nulCharacter

        package var description: String {
            switch self {
            case .unterminatedQuote(let quote): "a \(quote) quote is never closed"
            case .trailingBackslash: "it ends with a backslash that escapes nothing"
            case .empty: "it names no command"
            case .nulCharacter: "it holds a NUL character"
            }
        }
    }

    /// The words of `line`: at least one.
    package static func split(_ line: String) throws(Problem) -> [String] {
        var words: [String] = []
        var word = String.UnicodeScalarView()
        // A word has begun even when it is still empty: `''` is an empty argument.
        var inWord = false
        // Scalars, not characters: a quote or a blank followed by a combining mark is still a quote
        // or a blank.
        var characters = line.unicodeScalars.makeIterator()
        while let character = characters.next() {
            switch character {
            case "\0":
                throw .nulCharacter
            case " ", "\t", "\n", "\r":
                if inWord { words.append(String(word)) }
                word = String.UnicodeScalarView()
                inWord = false
            case "'":
                inWord = true
                while true {
                    guard let next = characters.next() else { throw .unterminatedQuote("'") }
                    if next == "'" { break }
                    if next == "\0" { throw .nulCharacter }
                    word.append(next)
                }
            case "\"":
                inWord = true
                while true {
                    guard let next = characters.next() else { throw .unterminatedQuote("\"") }
                    if next == "\"" { break }
                    if next == "\0" { throw .nulCharacter }
                    if next == "\\" {
                        guard let escaped = characters.next() else { throw .unterminatedQuote("\"") }
                        if escaped != "\"", escaped != "\\" { word.append("\\") }
                        if escaped == "\0" { throw .nulCharacter }
                        word.append(escaped)
                    } else {
                        word.append(next)
                    }
                }
            case "\\":
                guard let escaped = characters.next() else { throw .trailingBackslash }
                if escaped == "\0" { throw .nulCharacter }
                inWord = true
                word.append(escaped)
            default:
                inWord = true
                word.append(character)
            }
        }
        if inWord { words.append(String(word)) }
        guard !words.isEmpty else { throw .empty }
        return words
    }
}

import ChappieText
import Glibc

/// What the front binary was asked to do: the few command lines it answers itself, read exactly,
/// and everything else, which goes to the full binary unread.
///
/// The grammar served here is a strict subset of the full command tree's. A line outside it, an
/// environment that changes what a command means (a pool, a passphrase, other endpoints, a check
/// of the line only), or any doubt sends the line to `chappie-full` with the same arguments, so
/// help, typos, completions and every error message are the full binary's own.
public enum FrontRequest: Equatable, Sendable {
    /// `chappie --version`.
    case version
    /// `chappie token [NAME] [--margin D] [--socket PATH] [--home DIR] [--json]`.
    case token(TokenRequest)
    /// `chappie accounts list [--home DIR]` (the table; `--json` is the full binary's).
    case accountsList(home: String?)
    /// `chappie accounts current [--home DIR]` (its `--json` is the full binary's).
    case accountsCurrent(home: String?)
    /// `chappie prompt [--format FORMAT] [--home DIR]`.
    case prompt(format: String, home: String?)
    /// Anything else: the full binary's.
    case full

    /// What `token` was asked for.
    public struct TokenRequest: Equatable, Sendable {
        /// The account named on the line; `nil` for the active one.
        public var name: String?
        /// Refresh when the token expires within this many seconds.
        public var marginSeconds: Int64 = 300
        /// `--socket`.
        public var socket: String?
        /// `--home`.
        public var home: String?
        /// `--json`.
        public var json = false
    }

    /// Environment variables under which the front binary does not answer: each changes the store,
    /// the key, the endpoints or what `chappie` does with a line, and the full binary reads them.
    static let fullBinaryVariables = [
        "CHAPPIE_STORE_URL", "CHAPPIE_KEY_FILE", "CREDENTIALS_DIRECTORY", "CHAPPIE_CHECK_ONLY", "CHAPPIE_ISSUER", "CHAPPIE_BACKEND",
        "CHAPPIE_CA_FILE", "CHAPPIE_MACHINE", "CHAPPIE_STORE_PASSWORD_FILE", "CHAPPIE_ACCOUNT",
    ]

    /// Variables the full binary takes even when empty (an empty passphrase is an error there).
    static let fullBinaryWhenSet = ["CHAPPIE_PASSPHRASE", "CHAPPIE_NEW_PASSPHRASE", "CHAPPIE_BACKUP_PASSPHRASE"]

    /// Reads a command line (without the program's name) in `environment`.
    public init(arguments: [String], environment: (String) -> String? = FrontRequest.processEnvironment) {
        self = .full
        if arguments == ["--version"] {
            self = .version
            return
        }
        guard !Self.fullBinaryVariables.contains(where: { environment($0).map { !$0.isEmpty } ?? false }),
            !Self.fullBinaryWhenSet.contains(where: { environment($0) != nil })
        else { return }
        if let accounts = Self.accounts(arguments) {
            self = accounts
            return
        }
        if let prompt = Self.prompt(arguments) {
            self = prompt
            return
        }
        guard arguments.contains("token") else { return }
        var request = TokenRequest()
        var sawCommand = false
        var words = Words(arguments)
        func value(of option: String) -> String? { words.value(of: option) }
        while let word = words.current {
            if word == "token", !sawCommand {
                sawCommand = true
            } else if word == "--json", !request.json {
                request.json = true
            } else if word == "--home" || word.hasPrefix("--home=") {
                // Global options may stand before the command, as in the full binary.
                guard request.home == nil, let home = value(of: "--home"), let plain = Self.plainPath(home) else { return }
                request.home = plain
            } else if sawCommand, word == "--margin" || word.hasPrefix("--margin=") {
                guard let text = value(of: "--margin"), let margin = DurationText.parse(text) else { return }
                request.marginSeconds = margin.components.seconds
            } else if sawCommand, word == "--socket" || word.hasPrefix("--socket=") {
                guard request.socket == nil, let socket = value(of: "--socket"), let plain = Self.plainPath(socket) else { return }
                request.socket = plain
            } else if sawCommand, request.name == nil, Self.isAccountName(word) {
                request.name = word
            } else {
                return
            }
            words.advance()
        }
        guard sawCommand else { return }
        self = .token(request)
    }

    /// `accounts list` or `accounts current` with `--home DIR` before it (moved after it, as the
    /// full binary moves global options) or after it, and nothing else.
    static func accounts(_ arguments: [String]) -> FrontRequest? {
        var commands: [String] = []
        var home: String?
        var words = Words(arguments)
        while let word = words.current {
            if word == "--home" || word.hasPrefix("--home=") {
                // Between the command and its subcommand the full binary refuses it.
                guard commands != ["accounts"], home == nil, let value = words.value(of: "--home"), let plain = plainPath(value) else { return nil }
                home = plain
            } else {
                commands.append(word)
            }
            words.advance()
        }
        switch commands {
        case ["accounts", "list"]: return .accountsList(home: home)
        case ["accounts", "current"]: return .accountsCurrent(home: home)
        default: return nil
        }
    }

    /// `prompt` with a format the full binary would take and `--home DIR`, and nothing else.
    static func prompt(_ arguments: [String]) -> FrontRequest? {
        var sawCommand = false
        var format: String?
        var home: String?
        var words = Words(arguments)
        while let word = words.current {
            if word == "prompt", !sawCommand {
                sawCommand = true
            } else if word == "--home" || word.hasPrefix("--home=") {
                guard home == nil, let value = words.value(of: "--home"), let plain = plainPath(value) else { return nil }
                home = plain
            } else if sawCommand, word == "--format" || word.hasPrefix("--format=") {
                // A format the full binary refuses is its to explain.
                guard format == nil, let value = words.value(of: "--format"), PromptText.problem(with: value) == nil else { return nil }
                format = value
            } else {
                return nil
            }
            words.advance()
        }
        return sawCommand ? .prompt(format: format ?? PromptText.defaultFormat, home: home) : nil
    }

    /// A command line read word by word, with an option's value as ArgumentParser takes it.
    struct Words {
        let arguments: [String]
        private var index = 0

        init(_ arguments: [String]) {
            self.arguments = arguments
        }

        /// The word at hand, `nil` past the end.
        var current: String? { index < arguments.count ? arguments[index] : nil }

        mutating func advance() { index += 1 }

        /// The value of `option` at hand (`--option=value`, or `--option value`, moving onto it);
        /// `nil` when it has none, or the next word looks like an option (the full binary's to refuse).
        mutating func value(of option: String) -> String? {
            let word = arguments[index]
            // `--option=` with nothing after it is a missing value to ArgumentParser.
            if word.hasPrefix(option + "=") { return word.count > option.count + 1 ? String(word.dropFirst(option.count + 1)) : nil }
            guard word == option, index + 1 < arguments.count, !arguments[index + 1].hasPrefix("-") else { return nil }
            index += 1
            return arguments[index]
        }
    }

    /// The process's environment variable.
    public static func processEnvironment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// A name the full binary accepts (`AccountName`'s rule): 1 to 64 ASCII letters, digits, `-`,
    /// `_` and `.`, not `.` or `..`. A word that starts with `-` is an option, not a name.
    static func isAccountName(_ word: String) -> Bool {
        let bytes = Array(word.utf8)
        guard (1...64).contains(bytes.count), word != ".", word != "..", bytes.first != UInt8(ascii: "-") else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                true
            default: false
            }
        }
    }

    /// A path as given; `nil` (the full binary's to read) for an empty one, one that starts with
    /// `~` (the full binary expands it with the user database's home, not `HOME`) and one with
    /// `..` or `.` in it (the full binary resolves those without the file system, which a link
    /// could make differ).
    static func plainPath(_ path: String) -> String? {
        guard !path.isEmpty, !path.hasPrefix("~"), !path.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }),
            // Foundation drops a trailing and a doubled `/`: a path it would write otherwise is its to read.
            !path.contains("//"), path == "/" || !path.hasSuffix("/")
        else { return nil }
        return path
    }
}

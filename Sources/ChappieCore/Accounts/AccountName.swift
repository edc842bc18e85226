/// The name a user gives an account slot, such as `work` or `personal.plus`.
///
/// 1 to 64 characters, each an ASCII letter or digit, `-`, `_` or `.`; not `.` or `..`.
public struct AccountName: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The rule, in words, for error messages and help.
    public static let rule = "1 to 64 characters: letters, digits, '-', '_' and '.' (not '.' or '..')"

    /// The name.
    public let rawValue: String

    /// Validates a name.
    ///
    /// - Throws: ``AccountNameError`` saying what is wrong, without echoing control characters.
    public init(_ text: String) throws(AccountNameError) {
        guard !text.isEmpty else { throw .empty }
        guard text.unicodeScalars.count <= 64 else { throw .tooLong(text.unicodeScalars.count) }
        guard text.unicodeScalars.allSatisfy(Self.isAllowed), text != ".", text != ".." else {
            throw .invalidCharacters(Self.printable(text))
        }
        rawValue = text
    }

    /// A name made from arbitrary text, such as an e-mail address's local part: disallowed characters
    /// become `-`, and the result is cut to 64 characters; `nil` when nothing usable is left.
    public static func derived(from text: String) -> AccountName? {
        let scalars = text.unicodeScalars.map { isAllowed($0) ? Character($0) : "-" }
        var name = String(scalars.prefix(64))
        while name.hasPrefix("-") { name.removeFirst() }
        while name.hasSuffix("-") { name.removeLast() }
        return try? AccountName(name)
    }

    private static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "-", "_", ".": true
        default: false
        }
    }

    /// The text with control and non-ASCII characters escaped, safe to print in one line.
    static func printable(_ text: String) -> String {
        let escaped = text.unicodeScalars.prefix(80).map {
            $0.isASCII && $0.value >= 0x20 && $0.value != 0x7F ? String($0) : $0.escaped(asASCII: true)
        }.joined()
        return text.unicodeScalars.count > 80 ? escaped + "…" : escaped
    }

    /// The name.
    public var description: String { rawValue }

    /// Orders names alphabetically.
    public static func < (lhs: AccountName, rhs: AccountName) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Decodes and validates a name.
    public init(from decoder: any Decoder) throws {
        try self.init(try decoder.singleValueContainer().decode(String.self))
    }

    /// Encodes the name.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// An account name breaks the rule in ``AccountName/rule``.
public enum AccountNameError: Error, Sendable, Equatable, CustomStringConvertible, ChappieRecoverableError {
    /// A name that breaks the rule: the caller's input (or configuration) to fix.
    public var recovery: ChappieErrorRecovery { .permanent(.fixConfiguration) }

    /// The name is empty.
    case empty
    /// The name has more than 64 characters.
    case tooLong(Int)
    /// The name has a character outside the rule (shown escaped).
    case invalidCharacters(String)

    /// What is wrong, with the rule.
    public var description: String {
        switch self {
        case .empty: "an account name cannot be empty; use \(AccountName.rule)"
        case .tooLong(let count): "an account name has at most 64 characters, not \(count); use \(AccountName.rule)"
        case .invalidCharacters(let name): "\"\(name)\" is not a valid account name; use \(AccountName.rule)"
        }
    }
}

import ChappieSystem

extension JSONValue {
    /// A whole number as `JSONDecoder` reads an `Int64` from a JSON number (`1.0` and `1e2` are
    /// whole); only where a `Double` holds it exactly.
    var int64: Int64? {
        guard let number, number == number.rounded(.towardZero), number.magnitude < 0x1p53 else { return nil }
        return Int64(number)
    }

    /// A whole number in `Int32`'s range, as ``int64``.
    var int32: Int32? {
        int64.flatMap { Int32(exactly: $0) }
    }
}

/// An object's members as a synthesized `Decodable` reads them: required and optional ones, each
/// of its type. Members it does not know are doubt: the reader gives up where the decoder would
/// pass over them, since chappie's daemon never writes them.
struct Members {
    let members: [String: JSONValue]

    init?(_ value: JSONValue?, _ known: [String]) {
        guard case .object(let members)? = value, members.keys.allSatisfy(known.contains) else { return nil }
        self.members = members
    }

    subscript(key: String) -> JSONValue? { members[key] }

    /// A member that must be there, not null, and of the type.
    func required<T>(_ key: String, _ read: (JSONValue) -> T?) -> T? {
        members[key].flatMap(read)
    }

    /// `.some(nil)` when absent or null, `.some(value)` when of the type, `nil` otherwise.
    func optional<T>(_ key: String, _ read: (JSONValue) -> T?) -> T?? {
        guard let value = members[key], value != .null else { return .some(nil) }
        return read(value).map { .some($0) }
    }
}

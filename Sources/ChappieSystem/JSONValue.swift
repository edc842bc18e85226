/// A JSON document, read strictly (RFC 8259) without Foundation.
///
/// The front binary reads three small documents: a credential's plaintext, an access token's
/// claims and the daemon's reply. Foundation's decoder would bring Foundation into the binary
/// whose start-up is the point, so this reader stands in for it. Anything it refuses sends the
/// command to the full binary, which reads it with Foundation as before. The full binary holds the
/// daemon's replies to it too, so that both read a reply alike: one with a key twice (which
/// Foundation reads as its last value) is no reply.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// How deep arrays and objects may nest; deeper documents are refused, not recursed into.
    static let maximumDepth = 64

    /// Reads a whole document; `nil` for anything that is not exactly one JSON value (leading and
    /// trailing white space allowed), and for an object with a key twice.
    public static func parse(_ bytes: some Collection<UInt8>) -> JSONValue? {
        var reader = Reader(bytes: Array(bytes))
        guard let value = reader.value(depth: 0) else { return nil }
        reader.skipSpace()
        return reader.index == reader.bytes.count ? value : nil
    }

    /// The member `key` of an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { members[key] } else { nil }
    }

    /// The keys, when this is an object.
    public var objectKeys: [String] {
        if case .object(let members) = self { Array(members.keys) } else { [] }
    }

    /// The string, when this is one.
    public var string: String? {
        if case .string(let text) = self { text } else { nil }
    }

    /// The number, when this is one.
    public var number: Double? {
        if case .number(let number) = self { number } else { nil }
    }

    /// The Boolean, when this is one.
    public var bool: Bool? {
        if case .bool(let flag) = self { flag } else { nil }
    }
}

private struct Reader {
    let bytes: [UInt8]
    var index = 0

    mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    mutating func value(depth: Int) -> JSONValue? {
        skipSpace()
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "{"): return depth < JSONValue.maximumDepth ? object(depth: depth + 1) : nil
        case UInt8(ascii: "["): return depth < JSONValue.maximumDepth ? array(depth: depth + 1) : nil
        case UInt8(ascii: "\""): return string().map { .string($0) }
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        default: return number().map { .number($0) }
        }
    }

    mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected) else { return nil }
        index += expected.count
        return value
    }

    mutating func object(depth: Int) -> JSONValue? {
        index += 1
        var members: [String: JSONValue] = [:]
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            guard let member = value(depth: depth) else { return nil }
            // A repeated key is refused: Foundation's decoder takes the first, its serialization the
            // last, and a document that says two things is not one to act on.
            guard members.updateValue(member, forKey: key) == nil else { return nil }
            skipSpace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            } else {
                return nil
            }
        }
    }

    mutating func array(depth: Int) -> JSONValue? {
        index += 1
        var elements: [JSONValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            guard let element = value(depth: depth) else { return nil }
            elements.append(element)
            skipSpace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            } else {
                return nil
            }
        }
    }

    /// A string from its opening quote; UTF-8 is checked, escapes (with surrogate pairs) decoded.
    mutating func string() -> String? {
        index += 1
        var scalars = String.UnicodeScalarView()
        var start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                guard let run = String(validating: bytes[start..<index], as: UTF8.self) else { return nil }
                scalars.append(contentsOf: run.unicodeScalars)
                index += 1
                if byte == UInt8(ascii: "\"") { return String(scalars) }
                guard let escaped = escape() else { return nil }
                scalars.append(escaped)
                start = index
            } else if byte < 0x20 {
                return nil
            } else {
                index += 1
            }
        }
        return nil
    }

    /// The character after a backslash (and its `\u` digits).
    mutating func escape() -> Unicode.Scalar? {
        guard index < bytes.count else { return nil }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return Unicode.Scalar(byte)
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            guard let unit = hex4() else { return nil }
            if (0xD800..<0xDC00).contains(unit) {
                guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else { return nil }
                index += 2
                guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
            }
            return Unicode.Scalar(unit)
        default: return nil
        }
    }

    mutating func hex4() -> UInt32? {
        guard bytes.count - index >= 4 else { return nil }
        var unit: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            unit = unit << 4 | UInt32(digit)
            index += 1
        }
        return unit
    }

    /// A number in JSON's grammar; its value from the standard library's `Double(_:)`.
    mutating func number() -> Double? {
        let start = index
        func digits() -> Int {
            let first = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - first
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        let integerDigits = digits()
        guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
        var fraction = false
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            fraction = true
            guard digits() > 0 else { return nil }
        }
        let mantissaEnd = index
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            var signed = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
                signed = true
            }
            // Foundation's JSONDecoder refuses `0e6` (a zero, no fraction, an unsigned exponent),
            // valid as it is: the full binary would not read it, so neither does this reader.
            guard digits() > 0, fraction || signed || bytes[integerStart] != UInt8(ascii: "0") || integerDigits > 1 else { return nil }
        }
        guard let text = String(validating: bytes[start..<index], as: UTF8.self), let number = Double(text), number.isFinite else { return nil }
        // A number too small for a Double (`1e-400`) is refused by JSONDecoder, not read as 0.
        guard number != 0 || !bytes[integerStart..<mantissaEnd].contains(where: { (UInt8(ascii: "1")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return number
    }
}

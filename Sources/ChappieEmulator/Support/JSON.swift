import Foundation

/// A JSON value with ordered object keys, so replies have the key order and explicit `null`s of the
/// real service's bodies.
enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    /// Counters as an object, keys in order (the stats' form).
    static func counts(_ counts: [String: Int]) -> JSON {
        .object(counts.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })
    }

    static func == (lhs: JSON, rhs: JSON) -> Bool {
        lhs.serialized() == rhs.serialized()
    }

    /// Compact UTF-8 JSON text.
    func serialized() -> Data {
        var out = ""
        write(to: &out)
        return Data(out.utf8)
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value):
            out += value == value.rounded() && abs(value) < 1e15 ? String(format: "%.1f", value) : String(value)
        case .string(let value): JSON.writeString(value, to: &out)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                JSON.writeString(key, to: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    private static func writeString(_ string: String, to out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

/// A request body parsed leniently: a JSON object or an `application/x-www-form-urlencoded` form.
struct RequestFields: Sendable {
    /// Every top-level member, as the JSON value or the form's string.
    let values: [String: JSONInput]

    /// The parsed body, or `nil` when it is neither a JSON object nor a form.
    init?(body: Data, contentType: String?) {
        let type = contentType?.lowercased() ?? ""
        if type.contains("application/x-www-form-urlencoded") {
            var values: [String: JSONInput] = [:]
            for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let name = RequestFields.formDecode(parts[0]) else { return nil }
                let value = parts.count > 1 ? RequestFields.formDecode(parts[1]) ?? "" : ""
                values[name] = .string(value)
            }
            self.values = values
        } else {
            guard case .object(let members)? = try? JSONDecoder().decode(JSONInput.self, from: body) else {
                return nil
            }
            self.values = members
        }
    }

    /// The member as a string, if it is one.
    func string(_ name: String) -> String? {
        if case .string(let value)? = values[name] { return value }
        return nil
    }

    /// The member as a number, if it is one.
    func number(_ name: String) -> Double? {
        if case .number(let value)? = values[name] { return value }
        return nil
    }

    /// The member as a boolean, if it is one.
    func bool(_ name: String) -> Bool? {
        if case .bool(let value)? = values[name] { return value }
        return nil
    }

    private static func formDecode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}

/// A JSON value read from a request, reduced to what the emulator inspects.
enum JSONInput: Sendable, Hashable, Decodable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case array([JSONInput])
    case object([String: JSONInput])
    case null

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONInput].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONInput].self))
        }
    }
}

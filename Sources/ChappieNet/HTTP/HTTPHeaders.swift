public import Foundation

/// An ordered list of HTTP header fields whose names compare case-insensitively.
///
/// ```swift
/// var headers: HTTPHeaders = ["Content-Type": "application/json"]
/// headers.add(name: "Accept", value: "text/event-stream")
/// headers["content-type"]  // "application/json"
/// ```
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header field.
    public struct Field: Sendable, Hashable {
        /// The name as it was sent or received.
        public var name: String
        /// The value, without surrounding white space.
        public var value: String
    }

    private var fields: [Field]

    /// Creates an empty list.
    public init() {
        self.fields = []
    }

    /// Creates a list from name–value pairs, in order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The number of fields.
    public var count: Int { fields.count }

    /// The value of the first field with this name, compared case-insensitively.
    ///
    /// Setting a value replaces every field of that name; setting `nil` removes them.
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveEquals(name) }?.value }
        set {
            remove(name: name)
            if let newValue { add(name: name, value: newValue) }
        }
    }

    /// Every value of the fields with this name, in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// Whether a field with this name is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.caseInsensitiveEquals(name) }
    }

    /// Appends a field, keeping any others of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Removes every field with this name.
    public mutating func remove(name: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> {
        fields.makeIterator()
    }
}

extension String {
    /// ASCII case-insensitive comparison, as HTTP field names are compared.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        let lhs = utf8, rhs = other.utf8
        guard lhs.count == rhs.count else { return false }
        return zip(lhs, rhs).allSatisfy { a, b in
            a == b || (a ^ 0x20 == b && (a | 0x20) >= 0x61 && (a | 0x20) <= 0x7A)
        }
    }
}

extension HTTPHeaders {
    /// A `Retry-After` value as seconds from `now`: either form of RFC 9110 §10.2.3, delay-seconds
    /// (`120`) or an HTTP date (`Wed, 21 Oct 2026 07:28:00 GMT`); `nil` when unreadable. A date in
    /// the past is 0.
    public static func retryAfter(_ field: String, now: Date = Date()) -> TimeInterval? {
        let value = field.trimmingCharacters(in: .whitespaces)
        guard !value.isEmpty else { return nil }
        if let seconds = Double(value), seconds.isFinite { return Swift.max(0, seconds) }
        return httpDate(value).map { Swift.max(0, $0.timeIntervalSince(now)) }
    }

    /// An HTTP date (`Date`, `Retry-After`, …) in any of RFC 9110's three forms; `nil` when unreadable.
    public static func httpDate(_ field: String) -> Date? {
        // asctime pads a one-digit day with a space: fold runs of spaces.
        let value = field.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        for format in Self.httpDateFormats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: value) { return date }
        }
        return nil
    }

    /// IMF-fixdate, then the obsolete RFC 850 and asctime forms recipients must accept.
    private static let httpDateFormats = ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"]
}

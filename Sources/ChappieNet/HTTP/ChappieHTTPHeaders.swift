public import Foundation

/// An ordered list of HTTP header fields whose names compare case-insensitively.
///
/// ```swift
/// var headers: ChappieHTTPHeaders = ["Content-Type": "application/json"]
/// headers.add(name: "Accept", value: "text/event-stream")
/// headers["content-type"]  // "application/json"
/// ```
public struct ChappieHTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
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

extension ChappieHTTPHeaders {
    /// A `Retry-After` value as seconds from `now`: either form of RFC 9110 §10.2.3, delay-seconds
    /// (`120`) or an HTTP date (`Wed, 21 Oct 2026 07:28:00 GMT`); `nil` when unreadable. A date in
    /// the past is 0.
    public static func retryAfter(_ field: String, now: Date = Date()) -> TimeInterval? {
        let value = field.trimmingCharacters(in: .whitespaces)
        guard !value.isEmpty else { return nil }
        if let seconds = Double(value), seconds.isFinite { return Swift.max(0, seconds) }
        return httpDate(value, now: now).map { Swift.max(0, $0.timeIntervalSince(now)) }
    }

    /// An HTTP date (`Date`, `Retry-After`, …) in any of RFC 9110's three forms; `nil` when
    /// unreadable. Read by hand rather than with DateFormatter: a server's header is outside input,
    /// and three formatters made for every header cost far more than the parse.
    ///
    /// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
    /// - RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT` (a two-digit year more than 50 years ahead is
    ///   taken as the past century's, as RFC 9110 §5.6.7 says)
    /// - asctime: `Sun Nov  6 08:49:37 1994`
    public static func httpDate(_ field: String, now: Date = Date()) -> Date? {
        let parts = field.split(whereSeparator: { $0 == " " || $0 == "," })
        let day: Int?, month: Int?, year: Int?, time: Substring
        switch parts.count {
        case 6 where ["GMT", "UTC"].contains(parts[5]):
            (day, month, year, time) = (Int(parts[1]), monthNumber(parts[2]), Int(parts[3]), parts[4])
        case 4 where ["GMT", "UTC"].contains(parts[3]):
            let date = parts[1].split(separator: "-")
            guard date.count == 3, date[2].count == 2, let twoDigits = Int(date[2]) else { return nil }
            let thisYear = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "GMT") ?? .current, from: now).year ?? 2000
            var full = thisYear - thisYear % 100 + twoDigits
            if full > thisYear + 50 { full -= 100 }
            (day, month, year, time) = (Int(date[0]), monthNumber(date[1]), full, parts[2])
        case 5:
            (day, month, year, time) = (Int(parts[2]), monthNumber(parts[1]), Int(parts[4]), parts[3])
        default:
            return nil
        }
        let clock = time.split(separator: ":").compactMap { Int($0) }
        guard let day, let month, let year, (1970...9999).contains(year), clock.count == 3,
            (1...daysIn(month: month, year: year)).contains(day), (0...23).contains(clock[0]), (0...59).contains(clock[1]),
            (0...60).contains(clock[2])
        else { return nil }
        let seconds = (daysSinceEpoch(year: year, month: month, day: day) * 86400) + clock[0] * 3600 + clock[1] * 60 + clock[2]
        return Date(timeIntervalSince1970: Double(seconds))
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static func monthNumber(_ name: Substring) -> Int? {
        months.firstIndex(of: String(name)).map { $0 + 1 }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        case 1...12: 31
        default: 0
        }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
    /// days_from_civil).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let shifted = month <= 2 ? year - 1 : year
        let era = shifted / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

public import Foundation

/// Tokens one account used on one UTC day, as the service counts them (`wham/profiles/me`,
/// docs/protocol.md §8.4).
public struct DailyTokens: Sendable, Hashable, Codable {
    /// The account's id in the store.
    public var accountID: Int64
    /// The UTC day, `YYYY-MM-DD`.
    public var day: String
    /// The tokens of that day.
    public var tokens: Int

    /// A day's count, kept within 0 and ``maximumPerDay`` whatever the store held (a team pool's
    /// rows are anyone's who can write the pool).
    public init(accountID: Int64, day: String, tokens: Int) {
        self.accountID = accountID
        self.day = day
        self.tokens = min(max(0, tokens), Self.maximumPerDay)
    }

    /// `a + b`, stopping at `Int.max` rather than trapping: totals over many days.
    public static func adding(_ a: Int, _ b: Int) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? Int.max : sum
    }

    /// The most tokens a day is believed to hold: more is not a count (the largest seen are ~2·10⁹).
    public static let maximumPerDay = 1_000_000_000_000_000

    /// The days of a `wham/profiles/me` reply, `stats.daily_usage_buckets: [{start_date, tokens}]`,
    /// oldest first. A bucket that is not `{"start_date": "YYYY-MM-DD…", "tokens": 0…}` is left
    /// out; a day given twice keeps its last count. `nil` when the reply is not a profile, or says
    /// its statistics are unavailable (`metadata.stats_error`).
    public static func days(fromProfile data: Data) -> [(day: String, tokens: Int)]? {
        guard let profile = try? JSONDecoder().decode(Profile.self, from: data), let stats = profile.stats, !profile.unavailable else { return nil }
        var days: [String: Int] = [:]
        for bucket in stats.buckets ?? [] {
            guard let start = bucket.startDate, let day = Self.day(start), let value = bucket.tokens, value.isFinite, value >= 0,
                value <= Double(maximumPerDay), value == value.rounded()
            else { continue }
            days[day] = Int(value)
        }
        return days.sorted { $0.key < $1.key }.map { (day: $0.key, tokens: $0.value) }
    }

    /// What is read of the reply; anything else in it is ignored.
    private struct Profile: Decodable {
        struct Stats: Decodable {
            var buckets: [Bucket]?
            enum CodingKeys: String, CodingKey { case buckets = "daily_usage_buckets" }
        }

        /// A bucket, or whatever stands in its place (read as empty, never a failure of the whole).
        struct Bucket: Decodable {
            var startDate: String?
            var tokens: Double?
            enum CodingKeys: String, CodingKey {
                case startDate = "start_date", tokens
            }

            init(from decoder: any Decoder) throws {
                let container = try? decoder.container(keyedBy: CodingKeys.self)
                startDate = try? container?.decodeIfPresent(String.self, forKey: .startDate)
                tokens = try? container?.decodeIfPresent(Double.self, forKey: .tokens)
            }
        }

        var stats: Stats?
        var unavailable: Bool

        enum CodingKeys: String, CodingKey { case stats, metadata }
        enum MetadataKeys: String, CodingKey { case statsError = "stats_error" }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            stats = try? container.decodeIfPresent(Stats.self, forKey: .stats)
            let metadata = try? container.nestedContainer(keyedBy: MetadataKeys.self, forKey: .metadata)
            unavailable = (try? metadata?.decodeNil(forKey: .statsError)) == false
        }
    }

    /// `YYYY-MM-DD` from a date or a date-time that starts with one, if it is a real day.
    package static func day(_ text: String) -> String? {
        let prefix = String(text.prefix(10))
        guard prefix.count == 10, text.count == 10 || text.dropFirst(10).first == "T" else { return nil }
        let parts = prefix.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }), let year = Int(parts[0]), let month = Int(parts[1]),
            let dayOfMonth = Int(parts[2]), (1970...9999).contains(year), (1...12).contains(month)
        else { return nil }
        let lengths = [31, year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return (1...lengths[month - 1]).contains(dayOfMonth) ? prefix : nil
    }
}

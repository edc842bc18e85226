import ChappieText

/// A ChatGPT plan, decoded leniently from the `chatgpt_plan_type` claim or the usage `plan_type`.
///
/// Unknown strings are kept as ``unknown(_:)`` rather than rejected (docs/protocol.md §4.3).
public enum ChappiePlan: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `free`.
    case free
    /// `go`.
    case go
    /// `plus`.
    case plus
    /// `pro`.
    case pro
    /// `prolite` ("Pro Lite").
    case proLite
    /// `team` (a workspace plan).
    case team
    /// `self_serve_business_usage_based` (a workspace plan).
    case selfServeBusinessUsageBased
    /// `business` (a workspace plan).
    case business
    /// `enterprise_cbp_usage_based` (a workspace plan).
    case enterpriseCbpUsageBased
    /// `enterprise`, also sent as `hc` (a workspace plan).
    case enterprise
    /// `edu`, also sent as `education` (a workspace plan).
    case edu
    /// A plan string chappie does not know, as the service sent it.
    case unknown(String)

    /// Decodes a raw plan string, case-insensitively.
    public init(rawValue: String) {
        switch rawValue.lowercased() {
        case "free": self = .free
        case "go": self = .go
        case "plus": self = .plus
        case "pro": self = .pro
        case "prolite": self = .proLite
        case "team": self = .team
        case "self_serve_business_usage_based": self = .selfServeBusinessUsageBased
        case "business": self = .business
        case "enterprise_cbp_usage_based": self = .enterpriseCbpUsageBased
        case "enterprise", "hc": self = .enterprise
        case "edu", "education": self = .edu
        default: self = .unknown(rawValue)
        }
    }

    /// The string the service uses for this plan.
    public var rawValue: String {
        switch self {
        case .free: "free"
        case .go: "go"
        case .plus: "plus"
        case .pro: "pro"
        case .proLite: "prolite"
        case .team: "team"
        case .selfServeBusinessUsageBased: "self_serve_business_usage_based"
        case .business: "business"
        case .enterpriseCbpUsageBased: "enterprise_cbp_usage_based"
        case .enterprise: "enterprise"
        case .edu: "edu"
        case .unknown(let raw): raw
        }
    }

    /// The name to show a person, such as "Pro Lite".
    public var displayName: String {
        PlanName.display(raw: rawValue)
    }

    /// Whether this is a workspace plan (team, business, enterprise, edu).
    public var isWorkspace: Bool {
        switch self {
        case .team, .selfServeBusinessUsageBased, .business, .enterpriseCbpUsageBased, .enterprise, .edu: true
        default: false
        }
    }

    /// The raw value.
    public var description: String { rawValue }

    /// Decodes from the raw string.
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    /// Encodes as the raw string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

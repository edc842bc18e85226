/// A plan as people read it: "Plus", "Pro Lite", from the raw name the service sends (`ChappiePlan`'s
/// `displayName` is this, and so is the front binary's `accounts list`).
package enum PlanName {
    /// The name to show for `raw`, any case; an unknown plan shows as sent ("Unknown" when empty).
    package static func display(raw: String) -> String {
        switch raw.lowercased() {
        case "free": "Free"
        case "go": "Go"
        case "plus": "Plus"
        case "pro": "Pro"
        case "prolite": "Pro Lite"
        case "team": "Team"
        case "self_serve_business_usage_based": "Business (usage-based)"
        case "business": "Business"
        case "enterprise_cbp_usage_based": "Enterprise (usage-based)"
        case "enterprise", "hc": "Enterprise"
        case "edu", "education": "Edu"
        default: raw.isEmpty ? "Unknown" : raw
        }
    }
}

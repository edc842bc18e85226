/// The one headroom rule (`--best`, auto-switch, `accounts list`, `usage`), on plain numbers so that
/// the front binary applies the same rule as the full one.
package enum HeadroomRule {
    /// Whether the 5-hour window binds rather than the weekly one: the fuller binds; at equal use,
    /// the one that resets later (an unknown reset counts as 0001-01-01, Foundation's `distantPast`).
    package static func fiveHourBinds(fiveHourUsed: Double, fiveHourResetsAt: Double?, weeklyUsed: Double, weeklyResetsAt: Double?) -> Bool {
        if fiveHourUsed != weeklyUsed { return fiveHourUsed > weeklyUsed }
        return (fiveHourResetsAt ?? distantPast) > (weeklyResetsAt ?? distantPast)
    }

    /// Foundation's `Date.distantPast` (year 1 of its calendar) in seconds since 1970.
    static let distantPast: Double = -62_135_769_600

    /// The reserve (or 100) minus the binding window's use, never below 0.
    package static func percent(bindingUsed: Double?, reserve: Double?) -> Double {
        max(0, (reserve ?? 100) - (bindingUsed ?? 0))
    }
}

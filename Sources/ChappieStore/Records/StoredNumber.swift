package import ChappieCore
package import Foundation
package import GRDB

/// Numbers read back from a store, checked as if they came from outside (docs/security.md,
/// "Hostile input"): a team pool's rows are anyone's who can write the pool, and a local database
/// can be edited by hand. A value out of range would otherwise trap an integer conversion in
/// whatever shows it, in every process that reads the row, the daemon included. So a reading's
/// times outside 1970–9999 are unknown, its percentages are clamped to 0–100, its window lengths
/// beyond ten years are unknown, and a reading whose own time makes no sense is left out: it
/// fails only its own account's reading, never a command.
package enum StoredNumber {
    /// Unix seconds as a date, when 1970–9999.
    package static func date(_ seconds: Double?) -> Date? {
        seconds.flatMap(WireNumber.date(unixSeconds:))
    }

    /// Unix seconds as a date, when 1970–9999.
    package static func date(_ seconds: Int64?) -> Date? {
        seconds.flatMap { WireNumber.date(unixSeconds: Double($0)) }
    }

    /// A date held to 1970–9999 (a lease's times: a lease dated past 9999 is shown so, and holds
    /// its own account only, as any lease does until it expires); 1970 when not a number at all.
    package static func clamped(_ date: Date) -> Date {
        let seconds = date.timeIntervalSince1970
        return Date(timeIntervalSince1970: seconds.isNaN ? 0 : min(max(0, seconds), WireNumber.latestUnixSeconds))
    }

    /// Unix seconds, when 1970–9999.
    package static func seconds(_ value: Int64?) -> Int64? {
        value.flatMap { date($0) != nil ? $0 : nil }
    }

    /// Unix seconds, when finite and 1970–9999.
    package static func seconds(_ value: Double?) -> Double? {
        value.flatMap { date($0) != nil ? $0 : nil }
    }

    /// A use percentage clamped to 0–100; unknown when not finite.
    package static func percent(_ value: Double?) -> Double? {
        value.flatMap(WireNumber.percent)
    }

    /// A window's length in minutes, when 1 minute to ten years.
    package static func minutes(_ value: Int?) -> Int? {
        value.flatMap { (1...WireNumber.longestSeconds / 60).contains($0) ? $0 : nil }
    }

    /// A column's value as a whole number, whatever SQLite holds there (it keeps a REAL or TEXT in
    /// an INTEGER column as given): `nil` for anything but an integer, or a finite real with no
    /// fraction within Int64's range.
    package static func integer(_ value: DatabaseValue) -> Int64? {
        switch value.storage {
        case .int64(let integer): integer
        case .double(let real): Int64(exactly: real)
        default: nil
        }
    }

    /// A column's value as a real number, whatever SQLite holds there; `nil` for text, blobs and nulls.
    package static func real(_ value: DatabaseValue) -> Double? {
        switch value.storage {
        case .int64(let integer): Double(integer)
        case .double(let real): real.isFinite ? real : nil
        default: nil
        }
    }

    /// A column's value as text; `nil` for anything but text.
    package static func text(_ value: DatabaseValue) -> String? {
        if case .string(let text) = value.storage { text } else { nil }
    }
}

extension UsageReading {
    /// A reading as a store holds it, checked (``StoredNumber``); `nil` when its own time is out of range.
    package static func stored(
        accountID: Int64, observedAt: Double?, fiveHourUsed: Double?, fiveHourResetsAt: Int64?, weeklyUsed: Double?, weeklyResetsAt: Int64?,
        limitReached: Bool
    ) -> UsageReading? {
        guard let observedAt = StoredNumber.seconds(observedAt) else { return nil }
        return UsageReading(
            accountID: accountID, observedAt: observedAt, fiveHourUsed: StoredNumber.percent(fiveHourUsed),
            fiveHourResetsAt: StoredNumber.seconds(fiveHourResetsAt), weeklyUsed: StoredNumber.percent(weeklyUsed),
            weeklyResetsAt: StoredNumber.seconds(weeklyResetsAt), limitReached: limitReached)
    }
}

extension UsageWindowSummary {
    /// A window as a store sums it up, checked; `nil` when a time is out of range.
    package static func stored(
        accountID: Int64, kind: ChappieUsageWindow.Kind, resetsAt: Int64?, firstSample: Double?, lastSample: Double?, samples: Int,
        peakPercent: Double?, limitReached: Int
    ) -> UsageWindowSummary? {
        guard let resets = StoredNumber.date(resetsAt), let first = StoredNumber.date(firstSample), let last = StoredNumber.date(lastSample)
        else { return nil }
        return UsageWindowSummary(
            accountID: accountID, kind: kind, resetsAt: resets, firstSample: first, lastSample: last, samples: max(0, samples),
            peakPercent: StoredNumber.percent(peakPercent) ?? 0, limitReached: max(0, limitReached))
    }
}

extension UsageMachineSummary {
    /// One machine's readings of an account as a store sums them up, checked; `nil` when a time is out of range.
    package static func stored(
        machine: String, accountID: Int64, samples: Int, firstSample: Double?, lastSample: Double?, fiveHourPeak: Double?, weeklyPeak: Double?
    ) -> UsageMachineSummary? {
        guard let first = StoredNumber.date(firstSample), let last = StoredNumber.date(lastSample) else { return nil }
        return UsageMachineSummary(
            machine: machine, accountID: accountID, samples: max(0, samples), firstSample: first, lastSample: last,
            fiveHourPeak: StoredNumber.percent(fiveHourPeak), weeklyPeak: StoredNumber.percent(weeklyPeak))
    }
}

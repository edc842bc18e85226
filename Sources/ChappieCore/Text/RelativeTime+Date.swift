package import ChappieText
package import Foundation

extension RelativeTime {
    /// `date` relative to `now`.
    package static func describe(_ date: Date, now: Date = Date()) -> String {
        describe(secondsFromNow: date.timeIntervalSince(now))
    }
}

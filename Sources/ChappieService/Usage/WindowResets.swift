/// Finds where a usage window reset, from its readings in time order, for the charts.
///
/// A reading whose end time is later than the one before (by more than a minute) marks a reset when:
/// - the earlier end had passed by then, and the window was in use on either side: a new window
///   began at that end (drawn there, not at the late reading that showed it);
/// - or the use fell by a point or more before that end: the window was reset early, at about this
///   reading.
///
/// An idle window whose end the service keeps a window's length ahead is not a reset, even across a
/// gap in the readings; nor is a small difference between readings from different sources. Readings
/// without an end time are left out.
package struct WindowResets {
    private var last: (time: Double, used: Double, resetsAt: Double)?

    package init() {}

    /// Takes the next reading; returns when the window reset before it, if it did.
    package mutating func observe(time: Double, used: Double, resetsAt: Double?) -> Double? {
        guard let resetsAt else { return nil }
        defer { last = (time, used, resetsAt) }
        guard let last, resetsAt > last.resetsAt + 60 else { return nil }
        if time >= last.resetsAt {
            return last.used > 0 || used > 0 ? min(max(last.resetsAt, last.time), time) : nil
        }
        return used <= last.used - 1 ? time : nil
    }
}

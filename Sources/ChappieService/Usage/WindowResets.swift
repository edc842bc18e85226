/// Finds where a usage window reset, from its readings in time order, for the charts.
///
/// A reading whose reset time differs from the one before marks a reset when:
/// - the earlier reset time had passed by then: the window ran out and a new one began, at that
///   time (drawn there, not at the late reading that showed it);
/// - or the use fell: the window was reset early, at about this reading.
///
/// A reset time that merely moves while the use does not fall (an idle window whose end the service
/// keeps a window's length ahead) is not a reset.
struct WindowResets {
    private var last: (time: Double, used: Double, resetsAt: Double?)?

    /// Takes the next reading; returns when the window reset before it, if it did.
    mutating func observe(time: Double, used: Double, resetsAt: Double?) -> Double? {
        defer { last = (time, used, resetsAt ?? last?.resetsAt) }
        guard let last, let previous = last.resetsAt, let resetsAt, resetsAt != previous else { return nil }
        if time >= previous { return min(max(previous, last.time), time) }
        return used < last.used ? time : nil
    }
}

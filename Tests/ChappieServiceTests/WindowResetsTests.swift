@testable import ChappieService
import Testing

@Suite("Where a usage window reset")
struct WindowResetsTests {
    /// The resets found in readings of (time, use, end).
    private func resets(_ readings: [(time: Double, used: Double, end: Double?)]) -> [Double] {
        var tracker = WindowResets()
        return readings.compactMap { tracker.observe(time: $0.time, used: $0.used, resetsAt: $0.end) }
    }

    @Test("A window that ran out: the reset is at its old end, also when the reading that shows it came late or exactly then")
    func ranOut() {
        #expect(resets([(0, 10, 300), (100, 60, 300), (400, 5, 700)]) == [300])
        #expect(resets([(0, 10, 300), (300, 0, 600)]) == [300])
        // The old end before the previous reading (that reading still showed it): at the previous reading.
        #expect(resets([(0, 10, 300), (350, 60, 300), (400, 5, 700)]) == [350])
    }

    @Test("Reset early: the end moves and the use falls before the old end came")
    func early() {
        #expect(resets([(0, 40, 300), (60, 80, 300), (120, 5, 420)]) == [120])
        // The end moves but the use does not fall by a point: not a reset.
        #expect(resets([(0, 40, 300), (60, 40.5, 420)]).isEmpty)
    }

    @Test(
        "Not a reset: an idle window whose end moves ahead, also across a gap; an end that moves by seconds; the first reading; readings without an end"
    )
    func notResets() {
        #expect(resets((0..<10).map { (Double($0) * 30, 0, Double($0) * 30 + 300) }).isEmpty)
        #expect(resets([(0, 0, 300), (5000, 0, 5300)]).isEmpty)
        #expect(resets([(0, 50, 300), (60, 20, 330)]).isEmpty)
        #expect(resets([(0, 50, 300)]).isEmpty)
        // A reading without an end neither resets nor hides the next one's reset.
        #expect(resets([(0, 40, 300), (60, 80, 300), (90, 10, nil), (120, 5, 420)]) == [120])
    }
}

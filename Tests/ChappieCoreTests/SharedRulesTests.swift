import ChappieText
import ChappieCore
import Testing

@Suite("Rules every command and service shares: durations and exit codes")
struct SharedRulesTests {
    @Test("Durations: seconds, or a number with s, m, h or d; anything else is refused")
    func durations() {
        #expect(DurationText.parse("90") == .seconds(90))
        #expect(DurationText.parse("30s") == .seconds(30))
        #expect(DurationText.parse("5m") == .seconds(300))
        #expect(DurationText.parse("12h") == .seconds(43200))
        #expect(DurationText.parse("2d") == .seconds(172_800))
        for bad in ["", "-5m", "5x", "m", "1.5h", "10000000d", "5 m"] { #expect(DurationText.parse(bad) == nil, "\(bad)") }
        #expect(DurationText.format(.seconds(90 * 86400)) == "90d")
        #expect(DurationText.format(.seconds(43200)) == "12h")
        #expect(DurationText.format(.seconds(300)) == "5m")
        #expect(DurationText.format(.seconds(90)) == "90s")
        #expect(DurationText.format(.zero) == "0s")
    }

    @Test("A run with several results exits with the most serious: sign in again, then try later, then the first other failure")
    func mostSerious() {
        #expect(ChappieExitCode.mostSerious([]) == 0)
        #expect(ChappieExitCode.mostSerious([0, 0]) == 0)
        #expect(ChappieExitCode.mostSerious([1, 75, 0]) == 75)
        #expect(ChappieExitCode.mostSerious([75, 77, 1]) == 77)
        #expect(ChappieExitCode.mostSerious([78, 1]) == 78)
        #expect(ChappieErrorRecovery.signInAgain.exitCode == ChappieExitCode.signInRequired)
        #expect(ChappieErrorRecovery.permanent(.inspectCause).exitCode == ChappieExitCode.failure)
        #expect(ChappieErrorRecovery.permanent(.fixConfiguration).exitCode == ChappieExitCode.configuration)
    }
}

import ChappieCore
import ChappieService
import Testing

@Suite("Headroom: the one rule of --best, auto-switch, accounts list and usage")
struct HeadroomTests {
    private func snapshot(five: Double?, weekly: Double?, reached: Bool = false) -> ChappieUsageLimitSnapshot {
        ChappieUsageLimitSnapshot(
            limitID: "codex", plan: .plus,
            shortWindow: five.map { ChappieUsageWindow(usedPercent: $0, windowMinutes: 300, resetsAt: nil) },
            longWindow: weekly.map { ChappieUsageWindow(usedPercent: $0, windowMinutes: 10080, resetsAt: nil) },
            credits: nil, limitReached: reached)
    }

    @Test("The fuller window binds; headroom is the reserve minus its use, never below 0; at the reserve or limit reached, full")
    func rule() {
        let weeklyBinds = Headroom(snapshot(five: 30, weekly: 60), reservePercent: nil)
        #expect(weeklyBinds.bindingWindow == .weekly)
        #expect(weeklyBinds.percent == 40)
        #expect(!weeklyBinds.isFull)
        let fiveBinds = Headroom(snapshot(five: 70, weekly: 20), reservePercent: 80)
        #expect(fiveBinds.bindingWindow == .fiveHour)
        #expect(fiveBinds.percent == 10)
        #expect(!fiveBinds.isFull)
        let atReserve = Headroom(snapshot(five: 85, weekly: 20), reservePercent: 80)
        #expect(atReserve.percent == 0)
        #expect(atReserve.isFull)
        #expect(Headroom(snapshot(five: 10, weekly: 10, reached: true), reservePercent: nil).isFull)
        let unknown = Headroom(snapshot(five: nil, weekly: nil), reservePercent: nil)
        #expect(unknown.bindingWindow == nil)
        #expect(unknown.percent == 100)
    }

    @Test("A reserve is a percentage above 0 and at most 100, or none")
    func reserve() throws {
        #expect(try AccountsService.reserve(parsing: "none") == nil)
        #expect(try AccountsService.reserve(parsing: "NONE") == nil)
        #expect(try AccountsService.reserve(parsing: "80") == 80)
        #expect(try AccountsService.reserve(parsing: "100") == 100)
        for bad in ["0", "-5", "101", "eighty", ""] {
            #expect(throws: ServiceError.self) { try AccountsService.reserve(parsing: bad) }
        }
    }
}

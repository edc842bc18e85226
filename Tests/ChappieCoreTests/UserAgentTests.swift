import ChappieCore
import Foundation
import Testing

@Suite("chappie's User-Agent names chappie, its version, the system and the machine")
struct UserAgentTests {
    @Test("chappie/<version> (<os>; <arch>), the system as uname says it")
    func shape() throws {
        var system = utsname()
        uname(&system)
        let machine = withUnsafeBytes(of: system.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        #expect(ChappieVersion.userAgent == "chappie/\(ChappieVersion.current) (linux; \(machine))")
        #expect(!machine.isEmpty)
    }
}

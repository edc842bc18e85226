import ChappieService
import Foundation
import Testing

@Suite("Banked reset credits: a time outside 1970–9999 is unknown")
struct ResetCreditsDecodingTests {
    @Test("A credit expiring in year 99999 is listed with no expiry, not as in 35783567 d")
    func farExpiry() throws {
        let body =
            #"[{"id":"c1","status":"available","expires_at":"99999-01-01T00:00:00Z","granted_at":"0001-01-01T00:00:00Z"},"#
            + #"{"id":"c2","status":"available","expires_at":"2027-01-01T00:00:00Z"}]"#
        let credits = try #require(ResetCreditsService.credits(Data(body.utf8)))
        #expect(credits.first { $0.id == "c1" }?.expiresAt == nil)
        #expect(credits.first { $0.id == "c1" }?.grantedAt == nil)
        #expect(credits.first { $0.id == "c2" }?.expiresAt == Date(timeIntervalSince1970: 1_798_761_600))
    }
}

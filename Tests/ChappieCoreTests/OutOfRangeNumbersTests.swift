import ChappieCore
import ChappieTestSupport
import Foundation
import Testing

/// Numbers no service sends, as a hostile or broken one might (issue 26, breaks 2 and 7): never a
/// crash, never a value the store cannot read back.
@Suite("Numbers out of range from outside are unknown or clamped")
struct OutOfRangeNumbersTests {
    /// Each as JSON text, so that the exact wire form is what is decoded.
    static let hostile = ["9223372036854775807", "-9223372036854775808", "1e308", "-1e308", "18446744073709551616", "1.7976931348623157e308"]

    @Test("A JWT time outside 1970–9999 is unknown; one inside reads as given", arguments: hostile)
    func claimTimes(_ number: String) throws {
        let payload = #"{"exp": \#(number), "iat": \#(number), "email": "a@example.com"}"#
        let claims = try TokenClaims(jwt: "eyJhbGciOiJub25lIn0." + Self.base64URL(payload) + ".sig")
        #expect(claims.expiresAt == nil)
        #expect(claims.issuedAt == nil)
        #expect(claims.account.email == "a@example.com")
        let fine = try TokenClaims(jwt: "eyJhbGciOiJub25lIn0." + Self.base64URL(#"{"exp": 253402300799}"#) + ".sig")
        #expect(fine.expiresAt == Date(timeIntervalSince1970: 253_402_300_799))
    }

    @Test(
        "An ISO 8601 time outside 1970–9999 is unknown, as a number's is",
        arguments: ["99999-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "10000-01-01T00:00:00.5Z", "not a time"])
    func isoTimes(_ text: String) {
        #expect(WireNumber.date(iso8601: text) == nil)
    }

    @Test("An ISO 8601 time within 1970–9999 reads, with or without fractional seconds")
    func isoTimesInRange() {
        #expect(WireNumber.date(iso8601: "9999-12-31T23:59:59Z") == Date(timeIntervalSince1970: 253_402_300_799))
        #expect(WireNumber.date(iso8601: "2027-01-01T00:00:00.250Z") == Date(timeIntervalSince1970: 1_798_761_600.25))
    }

    @Test(
        "A usage reply with numbers out of range decodes, clamped or unknown (a negative percentage unreadable), and never traps", arguments: hostile)
    func usageReply(_ number: String) throws {
        let body = """
            {"plan_type": "plus", "rate_limit": {
              "primary_window": {"used_percent": \(number), "limit_window_seconds": \(number), "reset_at": \(number)},
              "secondary_window": {"used_percent": 12, "limit_window_seconds": 604800, "reset_at": \(number)}}}
            """
        // Below 0 is no percentage: the window is unreadable, and the reply says nothing of how full it is.
        guard !number.hasPrefix("-") else {
            #expect(throws: UsageDecodingError.unreadableWindow("primary_window")) { try ChappieUsageLimitSnapshot.decodeUsage(Data(body.utf8)) }
            return
        }
        let main = try #require(try ChappieUsageLimitSnapshot.decodeUsage(Data(body.utf8)).first)
        let windows = [main.shortWindow, main.longWindow].compactMap { $0 }
        #expect(windows.count == 2)
        for window in windows {
            #expect((0...100).contains(window.usedPercent))
            #expect(window.resetsAt == nil)
            #expect(window.windowMinutes.map { (1...5_256_000).contains($0) } ?? true)
        }
        #expect(windows.contains { $0.usedPercent == 100 })
        #expect(windows.contains { $0.windowMinutes == 10080 && $0.usedPercent == 12 })
    }

    @Test("Rate-limit headers and stream events with numbers out of range never trap", arguments: hostile)
    func headersAndEvents(_ number: String) throws {
        let headers = [
            "x-codex-primary-used-percent": number, "x-codex-primary-window-minutes": number, "x-codex-primary-reset-at": number,
        ]
        // A negative use is 0 with no length or reset known: no window at all (§6.2's rule).
        let snapshot = ChappieUsageLimitSnapshot.fromHeaders { headers[$0] }
        #expect((snapshot == nil) == number.hasPrefix("-"))
        #expect(snapshot.map { (0...100).contains($0.shortWindow?.usedPercent ?? $0.longWindow?.usedPercent ?? -1) } ?? true)
        let event = try #require(
            try JSONSerialization.jsonObject(
                with: Data(
                    """
                    {"rate_limits": {"primary": {"used_percent": \(number), "window_minutes": \(number), "reset_at": \(number)}}}
                    """.utf8)) as? [String: Any])
        let fromEvent = try #require(ChappieUsageLimitSnapshot.fromRateLimitsEvent(event))
        let window = try #require(fromEvent.shortWindow ?? fromEvent.longWindow)
        #expect((0...100).contains(window.usedPercent))
        #expect(window.resetsAt == nil)
    }

    @Test("A window made or decoded with any percentage holds 0–100")
    func windowClamps() throws {
        for value in [Double.infinity, -.infinity, .nan, 1e308, -5, 250] {
            #expect((0...100).contains(ChappieUsageWindow(usedPercent: value, windowMinutes: nil, resetsAt: nil).usedPercent))
        }
        let decoded = try JSONDecoder().decode(ChappieUsageWindow.self, from: Data(#"{"usedPercent": 1e308}"#.utf8))
        #expect(decoded.usedPercent == 100)
    }

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

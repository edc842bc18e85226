import ChappieCore
import ChappieText
import ChappieStore
import ChappieVault
import GRDB
import Foundation
import Testing

@testable import ChappieFront

/// The front binary applies some of the full binary's rules without Foundation. Where it cannot
/// share their code, these tests hold the two to the same answers.
@Suite("The front binary's rules give the full binary's answers")
struct SharedRulesAgreementTests {
    @Test("An account name: the front binary's check accepts exactly what AccountName accepts")
    func accountNames() {
        var generator = SeededGenerator(seed: 32)
        let alphabet = "aZ09._-/ é\u{0}~".map(String.init) + ["..", "."]
        var words = [".", "..", "", "-a", "a", String(repeating: "a", count: 64), String(repeating: "a", count: 65), "a.b", "..a", "a..", "é"]
        for _ in 0..<2000 {
            words.append((0..<Int.random(in: 1...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined())
        }
        for word in words where !word.hasPrefix("-") {
            #expect(FrontRequest.isAccountName(word) == ((try? AccountName(word)) != nil), "\(word.debugDescription)")
        }
    }

    @Test("A prompt's reset time: the C library's local time is Foundation's, to the minute, with and without its day")
    func promptClock() {
        // The process's own zone (the end-to-end suite runs both binaries under other TZ values).
        let formats = (MinuteFormat.formatter(.current, format: "HH:mm"), MinuteFormat.formatter(.current, format: "EEE HH:mm"))
        var generator = SeededGenerator(seed: 7)
        var instants: [Double] = [0, 59, 60, 86_399, 86_400, 951_782_400, 1_790_003_600, 253_402_300_799]
        for _ in 0..<2000 { instants.append(Double(Int64.random(in: 0...4_102_444_800, using: &generator))) }
        for seconds in instants {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(PromptText.localClock(seconds, withDay: false) == formats.0.string(from: date), "\(seconds)")
            #expect(PromptText.localClock(seconds, withDay: true) == formats.1.string(from: date), "\(seconds)")
        }
    }

    @Test("A prompt's ends: trimmed of the spaces Foundation trims, no more")
    func promptSpaces() {
        let pieces = [" ", "\t", "\u{3000}", "\u{A0}", "\u{2009}", "\n", "\u{200B}", "a", "é", "\u{301}", "↻", "\r\n"]
        var generator = SeededGenerator(seed: 9)
        for _ in 0..<3000 {
            let text = (0..<Int.random(in: 0...6, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            #expect(PromptText.trimmingSpaces(text) == text.trimmingCharacters(in: .whitespaces), "\(text.debugDescription)")
        }
    }

    @Test("A key's id: the front binary's is the vault's")
    func keyIDs() {
        for _ in 0..<20 {
            let key = SecretKey.generate()
            #expect(key.bytes.withUnsafeBytes { Sealing.keyID(Array($0)) } == key.id)
        }
    }

    @Test("The data directory and key file: the front binary's are the store's, for every way of giving them")
    func dataDirectories() {
        let cases: [(String?, [String: String])] = [
            ("/d", [:]), (nil, ["CHAPPIE_HOME": "/c", "HOME": "/h"]), (nil, ["HOME": "/h"]),
            (nil, ["HOME": "/h", "XDG_DATA_HOME": "/x", "XDG_CONFIG_HOME": "/y"]),
            (nil, ["HOME": "/h", "XDG_DATA_HOME": "x", "XDG_CONFIG_HOME": "y"]),
            ("/d/e", ["CHAPPIE_HOME": "/c"]),
            // Relative: against the working directory, as Foundation's file URLs take it.
            ("data", [:]), ("a/b", [:]), (nil, ["CHAPPIE_HOME": "data", "HOME": "/h"]),
        ]
        for (home, environment) in cases {
            let front = DataDirectory(home: home, environment: { environment[$0] })
            let store = StoreLocation.resolve(home: home, environment: environment)
            #expect(front?.path == store.directory.path, "\(home ?? "-") \(environment)")
            #expect(front?.keyFile == store.defaultKeyFile.path, "\(home ?? "-") \(environment)")
        }
    }
}

/// A small deterministic generator (SplitMix64), so that a failure repeats.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

@Suite("The front binary reads the store's times as GRDB reads them")
struct DatabaseTimeTests {
    @Test("Stored times, with and without milliseconds, are GRDB's to the millisecond; other forms are left to the full binary")
    func times() throws {
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<2000 {
            let millis = Int64.random(in: 0..<4_102_444_800_000, using: &generator)
            let date = Date(timeIntervalSince1970: Double(millis) / 1000)
            let text = try #require(String.fromDatabaseValue(date.databaseValue))
            let grdb = try #require(Date.fromDatabaseValue(text.databaseValue))
            let ours = try #require(AccountsTable.databaseTime(text), "\(text)")
            #expect(abs(ours - grdb.timeIntervalSince1970) < 1e-6, "\(text)")
            let whole = String(text.prefix(19))
            #expect(AccountsTable.databaseTime(whole) == Date.fromDatabaseValue(whole.databaseValue)?.timeIntervalSince1970, "\(whole)")
        }
        for text in ["2026-11-26T10:00:00.000", "2026-11-26 10:00", "2026-13-01 00:00:00", "2026-11-26 10:00:00.00", "2026-11-26 10:00:00Z", ""] {
            #expect(AccountsTable.databaseTime(text) == nil, "\(text)")
        }
    }
}

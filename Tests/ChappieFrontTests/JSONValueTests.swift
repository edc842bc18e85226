import ChappieSystem
import ChappieFuzzing
import ChappieText
import ChappieTestSupport
import Foundation
import Testing

@testable import ChappieFront

@Suite("The front binary's JSON reader agrees with Foundation's on what it reads, and refuses the rest")
struct JSONValueTests {
    /// Foundation's reading of the same bytes (`JSONDecoder`'s, as the full binary reads), in ``JSONValue``'s terms.
    static func foundation(_ bytes: Data) -> JSONValue? {
        FuzzTarget.foundationJSON(bytes)
    }

    @Test("Every JSON fixture of the real service reads as Foundation reads it")
    func fixtures() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Fixtures.directory.path).filter { $0.hasSuffix(".json") }
        #expect(names.count >= 10)
        for name in names {
            let bytes = try Fixtures.data(name)
            let ours = JSONValue.parse(Array(bytes))
            #expect(ours != nil, "\(name)")
            #expect(ours == Self.foundation(bytes), "\(name)")
        }
    }

    @Test(
        "Escapes, surrogate pairs, numbers and nesting",
        arguments: [
            (#"{"a":"\u00e9\ud83d\ude00\n\t\"\\\/"}"#, JSONValue.object(["a": .string("é😀\n\t\"\\/")])),
            (
                #"[1, -0.5, 2e3, 1E-2, true, false, null]"#,
                .array([.number(1), .number(-0.5), .number(2000), .number(0.01), .bool(true), .bool(false), .null])
            ),
            (#" {"exp": 1764000000} "#, .object(["exp": .number(1_764_000_000)])),
            ("\"caf\u{e9}\"", .string("café")),
        ])
    func reads(text: String, value: JSONValue) {
        #expect(JSONValue.parse(Array(text.utf8)) == value)
    }

    @Test(
        "What is not JSON is refused",
        arguments: [
            "", "{", "}", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "+1", "1e", "NaN", "Infinity", "tru", "nul", "\"\\x\"", "\"\\u12\"",
            "\"\\ud800\"", "\"\\ud800\\u0041\"", "\"a\nb\"", "{\"a\" 1}", "{1:2}", "[1 2]", "1 2", "\"unterminated", "1e999", #"{"a":1,"a":2}"#,
            "\"\u{FEFF}\" x",
        ])
    func refuses(text: String) {
        #expect(JSONValue.parse(Array(text.utf8)) == nil, "\(text)")
    }

    @Test("Invalid UTF-8 inside a string is refused; nesting deeper than 64 is refused, not recursed into")
    func limits() {
        #expect(JSONValue.parse([0x22, 0xC3, 0x28, 0x22]) == nil)
        #expect(JSONValue.parse(Array((String(repeating: "[", count: 64) + String(repeating: "]", count: 64)).utf8)) != nil)
        #expect(JSONValue.parse(Array((String(repeating: "[", count: 65) + String(repeating: "]", count: 65)).utf8)) == nil)
        #expect(JSONValue.parse(Array(String(repeating: "[", count: 100_000).utf8)) == nil)
    }

    @Test("Random documents: whatever Foundation reads as an object, the reader reads the same; it never crashes")
    func randomDocuments() {
        var generator = SeededGenerator(seed: 7)
        let pieces = ["{", "}", "[", "]", ",", ":", "\"a\"", "\"\\u00e9\"", "1", "-2.5e1", "true", "null", " ", "\"x\\\"y\"", "0", "\\"]
        for _ in 0..<5000 {
            let text = (0..<Int.random(in: 1...12, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            let ours = JSONValue.parse(Array(text.utf8))
            let theirs = Self.foundation(Data(text.utf8))
            if case .object? = theirs { #expect(ours == theirs, "\(text)") }
            if case .array? = theirs { #expect(ours == theirs, "\(text)") }
            if ours != nil, theirs != nil { #expect(ours == theirs, "\(text)") }
        }
    }
}

@Suite("What the fuzzer found in the front binary's reader")
struct FrontReaderRegressionTests {
    @Test("A byte-order mark inside a string is kept, as JSONDecoder keeps it (JSONSerialization drops it)")
    func byteOrderMark() {
        let bytes: [UInt8] = Array(#"{"a":""#.utf8) + [0xEF, 0xBB, 0xBF] + Array(#""}"#.utf8)
        #expect(JSONValue.parse(bytes) == .object(["a": .string("\u{FEFF}")]))
        #expect(JSONValueTests.foundation(Data(bytes)) == JSONValue.parse(bytes))
        #expect(FuzzTarget.frontReader.run(Data(bytes)).isEmpty)
    }

    @Test(
        "`0e6`, which JSONDecoder refuses though it is JSON, is refused too (make fuzz found it)", arguments: ["0e6", "0E6", "[0e6]", "{\"a\":0e6}"])
    func zeroWithExponent(text: String) {
        #expect(JSONValue.parse(Array(text.utf8)) == nil)
        #expect(FuzzTarget.frontReader.run(Data(text.utf8)).isEmpty)
        #expect(JSONValue.parse(Array("0.0e6".utf8)) == .number(0))
        #expect(JSONValue.parse(Array("10e6".utf8)) == .number(10_000_000))
    }

    @Test(
        "A number too small for a Double, which JSONDecoder refuses, is refused too (a hostile review found it); a zero written small is a zero",
        arguments: [
            "1e-400", "-1e-400", "2e-324",
            "[0.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001]",
        ])
    func underflow(text: String) {
        #expect(JSONValue.parse(Array(text.utf8)) == nil)
        #expect(JSONValueTests.foundation(Data(text.utf8)) == nil)
        #expect(FuzzTarget.frontReader.run(Data(text.utf8)).isEmpty)
        #expect(JSONValue.parse(Array("0e-400".utf8)) == .number(0))
        #expect(JSONValue.parse(Array("4.9e-324".utf8)) == .number(5e-324))
    }
}

@Suite("The front binary's prompt from the daemon's usage reply")
struct DaemonPromptReaderTests {
    static func line(_ reply: String, format: String = "{account} {plan} {window} {used}% {left} ↻{reset}") -> DaemonPromptReader.Outcome {
        DaemonPromptReader.outcome(reply: Array(reply.utf8), format: format, now: 1_790_000_000) { seconds, withDay in
            "\(Int(seconds))\(withDay ? "+day" : "")"
        }
    }

    @Test("The daemon's reply gives the active account's line, its binding window and reserve, and the full binary's line")
    func reply() {
        #expect(Self.line(DaemonReplies.usage) == .line("work Pro wk 91% 0 ↻1790400000+day"))
        #expect(FuzzTarget.frontReader.run(Data(DaemonReplies.usage.utf8)).isEmpty)
    }

    @Test("Where the C library and Foundation name the local zone alike, the front binary writes reset times; elsewhere not")
    func zones() {
        func alike(_ variables: [String: String]) -> Bool { PromptText.zoneIsNamedAlike { variables[$0] } }
        for zone in ["UTC", "Asia/Kolkata", "America/St_Johns", "Europe/Paris", "Etc/GMT-9"] { #expect(alike(["TZ": zone]), "\(zone)") }
        for zone in [
            "", "EST", "JST-9", "GMT-9", "UTC-3", ":Europe/Paris", "/usr/share/zoneinfo/Asia/Tokyo", "posix/Asia/Tokyo", "right/UTC", "asia/tokyo",
            "Nowhere/City", "Europe/../Etc/UTC", "CET-1CEST,M3.5.0,M10.5.0/3",
        ] {
            #expect(!alike(["TZ": zone]), "\(zone)")
        }
        #expect(!alike(["TZ": "UTC", "TZFILE": "/etc/localtime"]))
        #expect(!alike(["TZ": "Europe/Paris", "TZDIR": "/tmp"]))
    }

    @Test("No active account is no line; a refusal, a missing member, an unknown one or an odd time is the full binary's to read")
    func doubts() {
        #expect(Self.line(DaemonReplies.usage.replacingOccurrences(of: #""isActive":true"#, with: #""isActive":false"#)) == .line(nil))
        #expect(Self.line(#"{"ok":true,"accounts":[]}"#) == .line(nil))
        for reply in [
            #"{"ok":false,"error":"no","exitCode":1}"#, #"{"ok":true}"#, #"{"ok":true,"accounts":[],"usage":[1]}"#,
            DaemonReplies.usage.replacingOccurrences(of: #""maxLeases":1"#, with: #""maxLeases":1.5"#),
            DaemonReplies.usage.replacingOccurrences(of: #""status":"ok","#, with: ""),
            DaemonReplies.usage.replacingOccurrences(of: #""limitReached":false"#, with: #""limitReached":false,"extra":1"#),
            DaemonReplies.usage.replacingOccurrences(of: #""resetsAt":1790400000"#, with: #""resetsAt":1790400000.5"#),
            DaemonReplies.usage.replacingOccurrences(of: #""name":"work""#, with: #""name":"w o""#),
        ] {
            #expect(Self.line(reply) == .full, "\(reply)")
            #expect(FuzzTarget.frontReader.run(Data(reply.utf8)).isEmpty)
        }
    }
}

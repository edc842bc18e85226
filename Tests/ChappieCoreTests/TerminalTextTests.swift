import ChappieText
import ChappieCore
import Foundation
import Testing

@Suite("Text from servers and files is made safe for a terminal")
struct TerminalTextTests {
    @Test("Escape sequences, C1 controls, DEL and NUL are removed; line breaks and tabs become spaces unless kept")
    func sanitized() {
        let hostile = "evil\u{1B}]0;pwned\u{07}@example.com\u{1B}[2J\u{9B}31m\u{7F}\u{00}"
        let clean = TerminalText.sanitized(hostile)
        #expect(clean == "evil]0;pwned@example.com[2J31m")
        #expect(!clean.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        #expect(TerminalText.sanitized("a\nb\tc\rd") == "a b c d")
        #expect(TerminalText.sanitized("a\nb", keepingLineBreaks: true) == "a\nb")
        #expect(TerminalText.sanitized("plán ü 例え") == "plán ü 例え")
    }

    @Test("Bidirectional controls are removed, so that an e-mail cannot show as another")
    func bidirectional() {
        // "moc.elpmaxe@exe.gpj" shown backwards after U+202E reads as another address.
        #expect(TerminalText.sanitized("a\u{202E}moc.elpmaxe@b\u{202C}\u{2066}c\u{2069}\u{200F}\u{061C}") == "amoc.elpmaxe@bc")
        #expect(TerminalText.sanitized("שלום@example.com") == "שלום@example.com", "right-to-left letters stay")
        #expect(TerminalText.sanitized("a\u{200B}b\u{FEFF}c\u{2028}d\u{E0041}e") == "abcde", "invisible characters go too")
    }

    @Test("true and false in JSON are not the numbers 1 and 0")
    func booleansAreNotNumbers() throws {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(#"{"t": true, "f": false, "one": 1, "zero": 0}"#.utf8)) as? [String: Any])
        #expect(WireNumber.double(object["t"]) == nil)
        #expect(WireNumber.double(object["f"]) == nil)
        #expect(WireNumber.double(object["one"]) == 1)
        #expect(WireNumber.double(object["zero"]) == 0)
    }
}

@Suite("Clipping text for a column")
struct ClippedTextTests {
    @Test("Text is cut at a word boundary with an ellipsis, never mid-word unless one word is longer than the width")
    func wordBoundary() {
        #expect(TerminalText.clipped("short", to: 10) == "short")
        #expect(TerminalText.clipped("usage poll failed: could not connect", to: 20) == "usage poll failed…")
        #expect(TerminalText.clipped("abcdefghijklmnop", to: 6) == "abcde…")
        let long = String(repeating: "word ", count: 40)
        let clipped = TerminalText.clipped(long, to: 80)
        #expect(clipped.count <= 80 && clipped.hasSuffix("word…"))
    }
}

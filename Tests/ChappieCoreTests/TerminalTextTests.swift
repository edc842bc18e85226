import ChappieCore
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
}

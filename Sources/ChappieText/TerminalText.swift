/// Text from servers and files (e-mails, plan names, error descriptions) made safe to show on a
/// terminal: control characters could otherwise move the cursor, recolour or retitle the terminal,
/// or hide what follows.
package enum TerminalText {
    /// `text` without C0 and C1 control characters, DEL or bidirectional controls; each line break
    /// becomes a space unless `keepingLineBreaks` (for multi-line messages), and a tab always
    /// becomes a space.
    package static func sanitized(_ text: String, keepingLineBreaks: Bool = false) -> String {
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A where keepingLineBreaks: result.append(scalar)
            case 0x09, 0x0A, 0x0D: result.append(" ")
            case _ where isControl(scalar): continue
            default: result.append(scalar)
            }
        }
        return String(result)
    }

    /// The text cut to at most `width` characters at a word boundary, with `…` where it was cut
    /// (in the middle of a word only when its first word alone is longer).
    package static func clipped(_ text: String, to width: Int) -> String {
        guard text.count > width, width > 1 else { return text }
        let head = text.prefix(width - 1)
        let cut = head.lastIndex(of: " ").map { head[..<$0] } ?? head
        return cut.trimmingTrailingPunctuation() + "…"
    }

    /// C0 and C1 controls, DEL, the bidirectional controls (marks, embeddings, overrides,
    /// isolates), with which an e-mail such as `gpj.exe@…` written backwards would show as
    /// something it is not, and the invisible ones (zero-width characters, the byte-order mark,
    /// line and paragraph separators, tag characters), which hide text or break lines unseen.
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200B...0x200F, 0x2028...0x202E, 0x2060...0x2069, 0xFEFF, 0xE0000...0xE007F: true
        default: false
        }
    }
}

extension Substring {
    fileprivate func trimmingTrailingPunctuation() -> String {
        var text = self
        while let last = text.last, last == " " || last == "," || last == ";" || last == ":" { text.removeLast() }
        return String(text)
    }
}

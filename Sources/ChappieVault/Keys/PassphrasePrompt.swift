import ChappieSystem
import Foundation

/// Asks for a passphrase on the controlling terminal without echoing it.
public enum PassphrasePrompt {
    /// Whether standard input is a terminal.
    public static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 }

    /// Prints `prompt` on standard error and reads one line from standard input with echo off.
    ///
    /// - Returns: The passphrase, or `nil` when there is no terminal or input ended.
    public static func ask(_ prompt: String) -> SecretBytes? {
        guard isInteractive else { return nil }
        StandardStream.error.write(prompt)
        var original = termios()
        tcgetattr(STDIN_FILENO, &original)
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
            StandardStream.error.write("\n")
        }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(STDIN_FILENO, &byte, 1) == 1, byte != 0x0A {
            if byte != 0x0D { bytes.append(byte) }
        }
        defer { for index in bytes.indices { bytes[index] = 0 } }
        return SecretBytes(copying: bytes)
    }
}

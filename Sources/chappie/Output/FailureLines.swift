import ChappieCore
import ChappieSystem
import Foundation

/// One failure line per account on standard error (`work: FAILED: …`), or, when every account
/// failed the same way (a network down, an issuer refusing all), one line that names them all.
enum FailureLines {
    /// Writes `failures` (each account's message) of a command over `total` accounts.
    static func write(_ failures: [(name: AccountName, line: String)], of total: Int) {
        guard !failures.isEmpty else { return }
        let shapes = Set(failures.map { generic($0.line, name: $0.name) })
        if failures.count > 1, failures.count == total, shapes.count == 1, let shape = shapes.first {
            let names = failures.map(\.name.rawValue).joined(separator: ", ")
            StandardStream.error.write("all \(failures.count) accounts (\(names)) FAILED the same way: \(shape)\n")
            return
        }
        for failure in failures { StandardStream.error.write("\(failure.name): FAILED: \(failure.line)\n") }
    }

    /// The line with the account's name, as a whole word, as `NAME`: lines that differ only by it
    /// compare equal (an account named `a` leaves the other a's alone).
    static func generic(_ line: String, name: AccountName) -> String {
        let word = "[A-Za-z0-9._-]"
        let pattern = "(?<!\(word))" + NSRegularExpression.escapedPattern(for: name.rawValue) + "(?!\(word))"
        return line.replacingOccurrences(of: pattern, with: "NAME", options: .regularExpression)
    }
}

import ChappieCore
import Foundation
import Testing

/// What the documentation promises about the refresh's bounds is what the code does.
@Suite("Documented bounds match the code")
struct DocumentedBoundsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("The systemd unit gives a stopping daemon longer than a refresh's wait for the issuer")
    func stopTimeout() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("TimeoutStopSec=") })
        let seconds = try #require(Int64(line.dropFirst("TimeoutStopSec=".count)))
        #expect(seconds > RefreshBounds.answerTimeout.components.seconds + 10)
        #expect(text.contains("up to \(RefreshBounds.answerTimeout.components.seconds) s"))
    }
}

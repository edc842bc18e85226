import ChappieTestSupport
import Foundation
import Testing

/// The systemd user unit docs/operations.md gives, checked by systemd's own rating.
@Suite("The documented systemd unit", .tags(.slow))
struct SystemdUnitTests {
    @Test("docs/operations.md's unit is hardened: systemd-analyze security rates it OK (at most 3.0), and it has no network-online.target")
    func unitIsHardened() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let start = try #require(text.range(of: "```ini\n[Unit]"))
        let end = try #require(text.range(of: "```", range: start.upperBound..<text.endIndex))
        let unit = String(text[text.index(start.lowerBound, offsetBy: 7)..<end.lowerBound])
        #expect(!unit.contains("network-online.target"))
        for line in ["ProtectSystem=strict", "UMask=077", "ReadWritePaths=%h/.local/share/chappie %h/.codex", "TimeoutStopSec=150"] {
            #expect(unit.contains(line), "\(line)")
        }
        let directory = try TestTokens.temporaryDirectory("chappie-unit")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("chappie.service")
        try Data(unit.utf8).write(to: file)
        let runtime = directory.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let rated = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/systemd-analyze"), ["security", "--offline=true", "--user", file.path],
            environment: ["XDG_RUNTIME_DIR": runtime.path])
        let line = try #require(rated.stdout.split(separator: "\n").last { $0.contains("Overall exposure level") }, "\(rated.stdout) \(rated.stderr)")
        let level = try #require(line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }, "\(line)")
        #expect(level <= 3.0, "\(line)")
    }
}

public import Foundation

/// The real-shaped OpenAI bodies and streams under `Tests/Fixtures/openai` (see its README).
public enum Fixtures {
    /// The folder of the fixtures, found from this source file so no resource bundle is needed.
    public static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/openai")

    /// The Codex CLI's session logs under `Tests/Fixtures/codex` (see its README).
    public static let codex = directory.deletingLastPathComponent().appendingPathComponent("codex")

    /// The bytes of a fixture, such as `responses-text.sse`.
    public static func data(_ name: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent(name))
    }
}

import Chappie
import Foundation
import Testing

/// The overview sample of `Sources/Chappie/Chappie.docc/Chappie.md`, compiled here (not run: it
/// would use the store of the environment's home). The test below holds the catalog to these lines.
private func overviewSample() async throws -> String {
    // sample:
    let configuration = ChappieConfiguration(account: try AccountName("work"))
    let reply = try await Chappie.client(configuration: configuration).send("Say hello in French")
    print(reply)
    // :sample
    return reply
}

@Suite("The SDK's DocC catalog")
struct DocCatalogTests {
    @Test("The catalog's sample is the code this file compiles")
    func sampleCompiles() throws {
        let here = URL(fileURLWithPath: #filePath)
        let source = try String(contentsOf: here, encoding: .utf8)
        let compiled = try #require(source.components(separatedBy: "// sample:\n").dropFirst().first?.components(separatedBy: "    // :sample").first)
            .split(separator: "\n").map { $0.dropFirst(4) }.joined(separator: "\n")
        let catalog = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/Chappie/Chappie.docc/Chappie.md")
        let text = try String(contentsOf: catalog, encoding: .utf8)
        let documented = try #require(text.components(separatedBy: "```swift\n").dropFirst().first?.components(separatedBy: "\n```").first)
        #expect(documented == compiled)
    }
}

import ChappieTestSupport
import Foundation
import Testing

@Suite("The SDK's public API hands out no raw token (docs/sdk.md)")
struct PublicSurfaceTests {
    /// The modules an SDK user can import, and what no public declaration there may name.
    private static let modules = ["Chappie", "ChappieCore", "ChappieStore"]
    private static let forbidden = try! NSRegularExpression(
        pattern:
            #"\b(accessToken(?!ExpiresAt)|refreshToken|idToken|Credentials|SecretKey|TokenRefresher|OAuthClient|DeviceCodeSignIn|RefreshedTokens)\b|\bcredentials\s*\("#
    )

    @Test("No public declaration in Chappie, ChappieCore or ChappieStore names a token or a type that carries one")
    func noTokenInPublicDeclarations() throws {
        let sources = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        var offenders: [String] = []
        var scanned = 0
        for module in Self.modules {
            let folder = sources.appendingPathComponent(module)
            let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
            for file in files where file.pathExtension == "swift" {
                scanned += 1
                for (number, line) in try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                    .enumerated()
                {
                    let text = line.trimmingCharacters(in: .whitespaces)
                    // `public` anywhere in the declaration's first line (`@inlinable public func …` too).
                    guard text.contains("public "), !text.contains("public import"), !text.hasPrefix("///"), !text.hasPrefix("//"),
                        Self.forbidden.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
                    else { continue }
                    offenders.append("\(module)/\(file.lastPathComponent):\(number + 1): \(text)")
                }
            }
        }
        #expect(scanned > 40)
        #expect(offenders.isEmpty, "\(offenders.joined(separator: "\n"))")
    }
}

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

    /// The command line's helpers, and `[String: Any]` in a signature: `package`, not the SDK's.
    private static let cliOnly = try! NSRegularExpression(
        pattern:
            #"\b(enum|struct|class|protocol) (TerminalText|HTMLText|DurationText|ChappieExitCode|WireNumber|RelativeTime|MinuteFormat|CommandWords|RefreshBounds|Lease|AuditEvent|AuditEventKind)\b|\[String: Any\]|: Any\?"#
    )

    @Test("import Chappie exports the SDK only: no exit codes, terminal or HTML text helpers, or [String: Any] wire readers")
    func noCommandLineHelpersInPublicDeclarations() throws {
        let offenders = try Self.publicLines(matching: Self.cliOnly)
        #expect(offenders.isEmpty, "\(offenders.joined(separator: "\n"))")
    }

    /// Every `public` declaration line of the SDK's modules that `pattern` matches, as `Module/File:line: text`.
    private static func publicLines(matching pattern: NSRegularExpression) throws -> [String] {
        let sources = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        var offenders: [String] = []
        for module in Self.modules {
            let folder = sources.appendingPathComponent(module)
            let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
            for file in files where file.pathExtension == "swift" {
                for (number, line) in try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                    .enumerated()
                {
                    let text = line.trimmingCharacters(in: .whitespaces)
                    guard text.contains("public "), !text.contains("public import"), !text.hasPrefix("///"), !text.hasPrefix("//"),
                        pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
                    else { continue }
                    offenders.append("\(module)/\(file.lastPathComponent):\(number + 1): \(text)")
                }
            }
        }
        return offenders
    }

    @Test("Every type `import Chappie` exports is one docs/sdk.md lists: the command line's helpers are package")
    func everyExportedTypeIsDocumented() throws {
        let root = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let guide = try String(contentsOf: root.appendingPathComponent("docs/sdk.md"), encoding: .utf8)
        let declaration = try NSRegularExpression(pattern: #"^public (?:final )?(?:struct|enum|class|protocol|actor|typealias) ([A-Za-z0-9_]+)"#)
        var exported: Set<String> = []
        // `import Chappie` re-exports ChappieCore whole (Sources/Chappie/Exports.swift).
        for module in ["Chappie", "ChappieCore"] {
            let folder = root.appendingPathComponent("Sources/\(module)")
            let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
            for file in files where file.pathExtension == "swift" {
                for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                    let text = String(line)
                    if let match = declaration.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
                        let name = Range(match.range(at: 1), in: text)
                    {
                        exported.insert(String(text[name]))
                    }
                }
            }
        }
        #expect(exported.count > 40, "the scan sees the SDK's types: \(exported.sorted())")
        let undocumented = exported.filter { !guide.contains("`\($0)`") && !guide.contains("`\($0)(") && !guide.contains("`\($0).") }
        #expect(undocumented.isEmpty, "public in the SDK but not in docs/sdk.md (document it, or make it package): \(undocumented.sorted())")
    }

    @Test("No public declaration in Chappie, ChappieCore or ChappieStore names a token or a type that carries one")
    func noTokenInPublicDeclarations() throws {
        // The scan sees the modules' declarations: the pattern that matches any of them finds many.
        #expect(try Self.publicLines(matching: try NSRegularExpression(pattern: "public")).count > 200)
        let offenders = try Self.publicLines(matching: Self.forbidden)
        #expect(offenders.isEmpty, "\(offenders.joined(separator: "\n"))")
    }
}

import ChappieTestSupport
import Foundation
import Testing

/// Every `chappie …` line in a code block of the README and docs/*.md is one the parser accepts.
@Suite("Every chappie command line the docs show parses", .tags(.slow))
struct DocumentedCommandsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A command line found in a document, where it was, and its words.
    struct Example: CustomStringConvertible {
        var file: String
        var line: Int
        var words: [String]
        var description: String { "\(file):\(line): \(words.joined(separator: " "))" }
    }

    /// The documents: the README and every file in docs/.
    static func documents() throws -> [URL] {
        let docs = root.appendingPathComponent("docs")
        let names = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }.sorted()
        return [root.appendingPathComponent("README.md")] + names.map { docs.appendingPathComponent($0) }
    }

    /// The `chappie` lines of a document's fenced code blocks (shell ones or unlabelled; in a block
    /// with `$ ` prompts, only those lines, the rest being output), joined across `\`
    /// continuations, with leading variable assignments dropped; and its inline examples.
    static func examples(in url: URL) throws -> [Example] {
        let lines = try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")
        var examples: [Example] = []
        var block: [(line: Int, text: String)]?
        var shell = false
        for (index, raw) in lines.enumerated() {
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("```") {
                if let lines = block {
                    if shell { examples += commands(in: lines, file: url.lastPathComponent) }
                    block = nil
                } else {
                    block = []
                    shell = ["", "sh", "bash", "shell", "console"].contains(trimmed.dropFirst(3).trimmingCharacters(in: .whitespaces))
                }
                continue
            }
            if block != nil {
                block?.append((index + 1, trimmed))
                continue
            }
            // Inline code in prose: `chappie …` with an option is an example; without one it names
            // a command (`chappie exec`), and with `[` or `|` it is a synopsis.
            for (position, span) in raw.components(separatedBy: "`").enumerated()
            where position % 2 == 1 && span.hasPrefix("chappie ") && span.contains(" -") && !span.contains("[") && !span.contains("|") {
                examples.append(Example(file: url.lastPathComponent, line: index + 1, words: Array(words(span).dropFirst())))
            }
        }
        return examples
    }

    /// The command lines of one code block.
    static func commands(in block: [(line: Int, text: String)], file: String) -> [Example] {
        let prompted = block.contains { $0.text.hasPrefix("$ ") }
        var examples: [Example] = []
        var pending: (line: Int, text: String)?
        for (line, raw) in block {
            var text = raw
            if let started = pending {
                text = started.text + " " + text
            } else {
                if prompted {
                    guard text.hasPrefix("$ ") else { continue }
                    text.removeFirst(2)
                }
                while let first = text.split(separator: " ").first, first.contains("="), first.first?.isUppercase == true {
                    text = String(text.dropFirst(first.count)).trimmingCharacters(in: .whitespaces)
                }
                guard text.hasPrefix("chappie ") else { continue }
            }
            if text.hasSuffix("\\") {
                pending = (pending?.line ?? line, String(text.dropLast()))
                continue
            }
            examples.append(Example(file: file, line: pending?.line ?? line, words: Array(words(text).dropFirst())))
            pending = nil
        }
        return examples
    }

    /// Shell words up to the first unquoted comment, pipe, redirection, `;` or `&&`.
    static func words(_ line: String) -> [String] {
        var words: [String] = []
        var current = "", inWord = false
        var quote: Character?
        var characters = Array(line)[...]
        while let character = characters.popFirst() {
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
                continue
            }
            switch character {
            case "'", "\"":
                quote = character
                inWord = true
            case " ", "\t":
                if inWord { words.append(current) }
                current = ""
                inWord = false
            case "#" where !inWord, "|", ">", "<", ";":
                return inWord && ![">", "<"].contains(character) ? words + [current] : words
            case "&" where characters.first == "&":
                return inWord ? words + [current] : words
            case "2" where !inWord && characters.first == ">":
                return words
            case "\\":
                if let next = characters.popFirst() { current.append(next) }
                inWord = true
            default:
                current.append(character)
                inWord = true
            }
        }
        return inWord ? words + [current] : words
    }

    @Test("The extraction finds the README's lines and reads quotes, comments and continuations")
    func extraction() throws {
        #expect(
            Self.words(#"chappie ask "summarise this" --account work   # a comment"#) == ["chappie", "ask", "summarise this", "--account", "work"])
        #expect(Self.words("chappie usage report --by day --since 7d > week.csv") == ["chappie", "usage", "report", "--by", "day", "--since", "7d"])
        #expect(Self.words("chappie token work | cut -c1-8") == ["chappie", "token", "work"])
        let readme = try Self.examples(in: Self.root.appendingPathComponent("README.md"))
        #expect(readme.count >= 20, "\(readme)")
        #expect(readme.contains { $0.words == ["accounts", "add", "work"] })
    }

    @Test("Every documented chappie command line is accepted by the parser")
    func everyExampleParses() async throws {
        let examples = try Self.documents().flatMap { try Self.examples(in: $0) }
        #expect(examples.count >= 60, "found only \(examples.count)")
        let chappie = try BuiltProducts.executable("chappie")
        let scratch = try TestTokens.temporaryDirectory("chappie-docs")
        defer { try? FileManager.default.removeItem(at: scratch) }
        var refused: [String] = []
        for example in examples {
            let result = try await runProcess(
                chappie, example.words,
                environment: [
                    "CHAPPIE_CHECK_ONLY": "1", "HOME": scratch.path, "CHAPPIE_HOME": scratch.path, "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_KEY_FILE": nil,
                ])
            if result.status != 0 { refused.append("\(example)\n  → \(result.stderr.split(separator: "\n").first ?? "")") }
        }
        #expect(refused.isEmpty, "\(refused.count) documented lines do not parse:\n\(refused.joined(separator: "\n"))")
        // Nothing ran: no store was made.
        #expect(!FileManager.default.fileExists(atPath: scratch.appendingPathComponent("chappie.sqlite").path))
    }

    @Test(
        "The examples of guard, bind, prompt, credits, exec and lease --failover, the alert settings and usage report --tokens run against the emulator"
    )
    func newerExamplesRun() async throws {
        let examples = try ["cli.md", "operations.md"].flatMap {
            try Self.examples(in: Self.root.appendingPathComponent("docs").appendingPathComponent($0))
        }
        .filter { example in
            let words = example.words
            return ["guard", "bind", "unbind", "prompt", "credits"].contains(words.first ?? "") || words.contains("--failover")
                || words.contains("--tokens") || (words.starts(with: ["config", "set"]) && words.dropFirst(2).first?.hasPrefix("alert-") == true)
        }
        #expect(examples.count >= 12, "\(examples)")
        #expect(examples.contains { $0.words.contains("--failover") } && examples.contains { $0.words.first == "guard" })
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["work", "home"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            // Stand-ins for the programs the examples run: they succeed.
            // The examples run in a directory of their own, outside the data directory (reports are written there).
            let scratch = try TestTokens.temporaryDirectory("chappie-docs-run")
            defer { try? FileManager.default.removeItem(at: scratch) }
            let bin = scratch.appendingPathComponent(".bin")
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            for program in ["codex", "my-agent"] {
                let file = bin.appendingPathComponent(program)
                try Data("#!/bin/sh\nexit 0\n".utf8).write(to: file)
                chmod(file.path, 0o755)
            }
            let path = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            var failed: [String] = []
            for example in examples {
                let result = try await testbed.chappie(example.words, environment: ["PATH": path], directory: scratch)
                // 0, or 1 where the example's outcome depends on the account (nothing to redeem).
                let allowed: Set<Int32> = example.words.starts(with: ["credits", "redeem"]) ? [0, 1] : [0]
                if !allowed.contains(result.status) { failed.append("\(example) → \(result.status): \(result.stderr.prefix(300))") }
            }
            #expect(failed.isEmpty, "\(failed.joined(separator: "\n"))")
        }
    }

    @Test("The README's short path runs against the emulator as written: sign in, switch, and Codex's home holds the account")
    func shortPathRuns() async throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let block = try #require(
            readme.components(separatedBy: "The short path:").dropFirst().first?.components(separatedBy: "```").dropFirst().first)
        let examples = Self.commands(in: block.components(separatedBy: "\n").enumerated().map { ($0.offset, $0.element) }, file: "README.md")
        #expect(examples.map(\.words) == [["accounts", "add", "work"], ["accounts", "switch", "work"]], "\(examples)")
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let codex = testbed.userHome.appendingPathComponent(".codex")
            try FileManager.default.createDirectory(at: codex, withIntermediateDirectories: true)
            for example in examples {
                let result = try await testbed.chappie(example.words)
                #expect(result.status == 0, "\(example): \(result.stderr)")
            }
            let auth = JSONDocument(try Data(contentsOf: codex.appendingPathComponent("auth.json")))
            let listed = JSONDocument(Data(try await testbed.chappie(["accounts", "show", "work", "--json"]).stdout.utf8))
            #expect(auth.string("tokens", "account_id") == listed.string("chatgptAccountID"))
        }
    }
}

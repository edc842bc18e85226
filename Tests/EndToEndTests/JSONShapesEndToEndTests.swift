import ChappieCore
import ChappieTestSupport
import Foundation
import Testing

/// JSON values keep booleans apart from numbers here (JSONSerialization on Linux does not).
typealias JSONValue = ChappieJSONValue

extension ChappieJSONValue {
    static func parse(_ text: String) throws -> ChappieJSONValue {
        try JSONDecoder().decode(ChappieJSONValue.self, from: Data(text.utf8))
    }
}

/// The shapes docs/json.md documents, read from its examples, and a check of output against them.
struct DocumentedShapes {
    /// The named objects (`### account` under "Objects").
    var objects: [String: JSONValue] = [:]
    /// Each command section's examples, by each command its heading names.
    var commands: [String: [JSONValue]] = [:]

    init() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/json.md"), encoding: .utf8)
        var headings: [String] = [], inObjects = false
        var block: [String]?
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("## ") { inObjects = line == "## Objects" }
            if line.hasPrefix("### ") {
                // A section may name several commands: `accounts show`, `accounts current`, ….
                let title = String(line.dropFirst(4))
                let named = title.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map {
                    String($0.element)
                }
                headings = named.isEmpty ? [title] : named
            }
            if line.hasPrefix("```") {
                if let lines = block {
                    let value = try JSONValue.parse(lines.joined(separator: "\n"))
                    for heading in headings {
                        if inObjects { objects[heading] = value } else { commands[heading, default: []].append(value) }
                    }
                    block = nil
                } else if line == "```json" {
                    block = []
                }
                continue
            }
            block?.append(line)
        }
    }

    static func isTime(_ text: String) -> Bool {
        let formatter = ISO8601DateFormatter()
        if formatter.date(from: text) != nil { return true }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text) != nil
    }

    /// Where `actual` departs from the documented `shape`: keys not documented, values of another type.
    func problems(_ actual: JSONValue, against shape: JSONValue, at path: String = "$") -> [String] {
        switch (shape, actual) {
        case (_, .null):
            return []
        case (.string(let name), _) where name.hasPrefix("@"):
            guard let object = objects[String(name.dropFirst())] else { return ["\(path): docs/json.md has no object \(name)"] }
            return problems(actual, against: object, at: path)
        case (.object(let keys), .object(let values)):
            return values.sorted { $0.key < $1.key }.flatMap { key, value -> [String] in
                guard let expected = keys[key] ?? keys["*"] else { return ["\(path).\(key) is not documented"] }
                return problems(value, against: expected, at: "\(path).\(key)")
            }
        case (.array(let shapes), .array(let values)):
            guard let element = shapes.first else { return [] }
            return values.enumerated().flatMap { problems($1, against: element, at: "\(path)[\($0)]") }
        case (.string(let example), .string(let value)):
            return Self.isTime(example) && !Self.isTime(value) ? ["\(path): \"\(value)\" is not an RFC 3339 time"] : []
        case (.number, .number), (.bool, .bool):
            return []
        default:
            return ["\(path): \(actual) where docs/json.md shows \(shape)"]
        }
    }

    /// The problems of one command's output against its section's example (the first one whose
    /// `type` matches, for `ask`'s events).
    func problems(_ output: String, command: String) throws -> [String] {
        guard let examples = commands[command], let first = examples.first else { return ["docs/json.md has no section for \(command)"] }
        let actual = try JSONValue.parse(output)
        if case .object(let keys) = actual, case .string(let type)? = keys["type"] {
            let match = examples.first { if case .object(let shape) = $0, case .string(type)? = shape["type"] { true } else { false } }
            guard let match else { return ["\(command): an event of type \(type) is not documented"] }
            return problems(actual, against: match)
        }
        return problems(actual, against: first)
    }
}

@Suite("Every --json output has the shape docs/json.md gives", .tags(.slow))
struct JSONShapesEndToEndTests {
    @Test("The checker finds undocumented keys, strings for booleans and times that are not RFC 3339")
    func checkerCatchesDepartures() throws {
        let shapes = try DocumentedShapes()
        #expect(shapes.objects.keys.sorted() == ["account", "daemon", "lease", "usage", "window"])
        #expect(try shapes.problems(#"[{"account": "work", "ok": true}]"#, command: "usage poll").isEmpty)
        #expect(try shapes.problems(#"[{"account": "work", "ok": "true"}]"#, command: "usage poll").count == 1)
        #expect(try shapes.problems(#"[{"name": "work", "ok": true}]"#, command: "usage poll").count == 1)
        #expect(try shapes.problems(#"{"name": "work", "createdAt": "yesterday"}"#, command: "accounts show").count == 1)
        #expect(try shapes.problems(#"{"name": "work", "usage": {"fiveHour": {"used_percent": 3}}}"#, command: "accounts show").count == 1)
    }

    @Test("Every command's --json, run against the emulator, has its documented shape")
    func everyCommand() async throws {
        let shapes = try DocumentedShapes()
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            var failures: [String] = []
            @discardableResult
            func check(_ command: String, _ arguments: [String], environment: [String: String?] = [:], status: Int32 = 0) async throws -> String {
                let result = try await testbed.chappie(arguments + ["--json"], environment: environment)
                guard result.status == status else {
                    failures.append("\(arguments.joined(separator: " ")): exit \(result.status): \(result.stderr)")
                    return result.stdout
                }
                let lines = command == "ask" ? result.stdout.split(separator: "\n").map(String.init) : [result.stdout]
                for line in lines {
                    do {
                        failures += try shapes.problems(line, command: command).map { "\(arguments.joined(separator: " ")): \($0)" }
                    } catch {
                        failures.append("\(arguments.joined(separator: " ")): not JSON: \(line)")
                    }
                }
                return result.stdout
            }

            try await check("accounts add", ["accounts", "add", "work"])
            try await check("accounts add", ["accounts", "add", "home"])
            try await check("accounts list", ["accounts", "list"])
            try await check("accounts show", ["accounts", "show", "work"])
            try await check("accounts current", ["accounts", "current"])
            try await check("accounts set", ["accounts", "set", "work", "--reserve", "90"])
            try await check("accounts rename", ["accounts", "rename", "home", "house"])
            let codexHome = testbed.home.appendingPathComponent("codex")
            try await check("accounts switch", ["accounts", "switch", "work", "--codex-home", codexHome.path])
            let found = try await check(
                "accounts switch", ["accounts", "switch", "house"], environment: ["CODEX_HOME": testbed.home.appendingPathComponent("codex-env").path]
            )
            #expect(found.contains(#""codexHomeFoundIn" : "$CODEX_HOME""#), "\(found)")
            try await check("usage poll", ["usage", "poll", "--all"])
            try await check("usage", ["usage"])
            try await check("usage", ["usage", "--cached", "--forecast"])
            try await check("usage history", ["usage", "history", "work"])
            for grouping in ["day", "window", "machine"] {
                try await check("usage report --format json", ["usage", "report", "--format", "json", "--by", grouping])
            }
            try await check("usage prune", ["usage", "prune", "--older-than", "400d"])
            try await check("token", ["token", "work"])
            try await check("refresh", ["refresh", "work"])
            let events = try await check("ask", ["ask", "hello there"]).split(separator: "\n")
            #expect(events.count >= 3 && events.last?.contains(#""type":"done""#) == true, "\(events)")
            // The error event: a full window.
            let work = try JSONValue.parse(try await testbed.chappie(["accounts", "show", "work", "--json"]).stdout)
            if case .object(let shown) = work, case .string(let accountID)? = shown["chatgptAccountID"] {
                _ = try await testbed.control("/_emulator/accounts/\(accountID)/usage", method: "POST", body: #"{"weekly_used_percent":100}"#)
            }
            let failed = try await check("ask", ["ask", "more", "--account", "work"], status: 75)
            #expect(failed.contains(#""type":"error""#), "\(failed)")
            let lease = try await check("lease acquire", ["lease", "acquire", "--ttl", "1m"])
            try await check("lease list", ["lease", "list"])
            guard case .object(let granted) = try JSONValue.parse(lease), case .string(let id)? = granted["id"] else {
                Issue.record("lease acquire --json has no id: \(lease)")
                return
            }
            try await check("lease acquire", ["lease", "renew", id])
            try await check("lease release", ["lease", "release", id])
            try await check("log", ["log"])
            try await check("key status", ["key", "status"])
            try await check("config get", ["config", "set", "usage-retention", "90d"])
            try await check("config get", ["config", "get", "codex-home"])
            try await check("config get", ["config", "unset", "usage-retention"])
            let elsewhere = try TestTokens.temporaryDirectory("chappie-json-backup")
            defer { try? FileManager.default.removeItem(at: elsewhere) }
            let backup = elsewhere.appendingPathComponent("all.backup").path
            let passphrase: [String: String?] = ["CHAPPIE_BACKUP_PASSPHRASE": "a long passphrase for the backup"]
            try await check("backup", ["backup", backup], environment: passphrase)
            try await check("restore", ["restore", backup], environment: passphrase)
            try await check("key rotate", ["key", "rotate"])
            try await check("doctor", ["doctor"])
            try await check("status", ["status"])
            // A poll that fails: `ok` false, with the reason.
            _ = try await testbed.control(
                "/_emulator/faults", method: "POST", body: #"{"kind":"status","status":503,"path":"/backend-api/wham/usage"}"#)
            try await check("usage poll", ["usage", "poll", "work"], status: 75)
            // The daemon's view.
            let daemon = try testbed.startDaemon([])
            try await testbed.waitForSocket()
            try await check("status", ["status"])
            #expect(await testbed.stop(daemon) == 0)
            try await check("accounts remove", ["accounts", "remove", "house", "--yes"])
            #expect(failures.isEmpty, "\(failures.count) departures from docs/json.md:\n\(failures.joined(separator: "\n"))")
        }
    }
}

import ChappieTestSupport
import Foundation
import Testing

@Suite("Examples/HostTools, built and run as its README says", .tags(.slow))
struct ExampleEndToEndTests {
    @Test("The host-tools example signs in, runs the automatic tool, asks before the .ask tool, and prints the answers", arguments: ["y", "n"])
    func hostTools(answer: String) async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let files = testbed.home.appendingPathComponent("files")
            try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: files.appendingPathComponent("notes.txt").path, contents: Data())
            _ = try await testbed.control(
                "/_emulator/tools/script", method: "POST", body: #"{"name":"get_time","arguments":"{\"zone\":\"Europe/Paris\"}"}"#)
            let arguments = try JSONSerialization.data(withJSONObject: ["path": files.path])
            let script = try JSONSerialization.data(withJSONObject: [
                "name": "list_directory", "arguments": String(decoding: arguments, as: UTF8.self),
            ])
            _ = try await testbed.control("/_emulator/tools/script", method: "POST", body: String(decoding: script, as: UTF8.self))

            let result = try await runProcess(
                try BuiltProducts.executable("chappie-example-host-tools"),
                testbed.service + ["What time is it in Paris?", "What is in my files?"], input: "\(answer)\n", timeout: .seconds(120))
            #expect(result.stdout.contains("Signed in as"), "\(result.stdout)\n\(result.stderr)")
            #expect(result.stdout.contains("[tool] get_time completed"))
            #expect(result.stdout.contains("The tool get_time returned: It is "))
            #expect(result.stdout.contains("? list_directory wants to run with"))
            if answer == "y" {
                #expect(result.status == 0, "\(result.stderr)")
                #expect(result.stdout.contains("The tool list_directory returned: notes.txt"))
            } else {
                #expect(result.status == 1)
                #expect(result.stdout.contains("[tool] list_directory denied"))
                #expect(
                    result.stderr.contains("The tool list_directory was denied: the user said no (permanent: inspect the cause)"), "\(result.stderr)")
            }
        }
    }

    @Test("The seed-snippets example signs in with its states, streams with usage and tokens, stops from a handle, and reports a full window")
    func seedSnippets() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let example = try BuiltProducts.executable("chappie-example-seed-snippets")
            let first = try await runProcess(example, testbed.service + ["Tell me about Paris."], timeout: .seconds(120))
            #expect(first.status == 0, "\(first.stdout)\n\(first.stderr)")
            for line in ["signed out: signing in", "signed in", "reply: You said: Tell me about Paris.", "usage: primary "] {
                #expect(first.stdout.contains(line), "\(line) in \(first.stdout)")
            }
            #expect(first.stdout.range(of: #"open \S+ and enter \S+"#, options: .regularExpression) != nil)
            #expect(first.stdout.range(of: #"tokens: [1-9]"#, options: .regularExpression) != nil)

            // Restored, then stopped from the handle after the first delta of a slow reply.
            _ = try await testbed.control("/_emulator/faults", method: "POST", body: #"{"kind":"slow_stream","ms":300}"#)
            let stopped = try await runProcess(
                example, testbed.service + ["--stop-after", "1", "one two three four five six"], timeout: .seconds(120))
            #expect(stopped.status == 0, "\(stopped.stdout)\n\(stopped.stderr)")
            #expect(stopped.stdout.contains("signed in: "), "\(stopped.stdout)")
            #expect(stopped.stdout.contains("stopped after "), "\(stopped.stdout)")
            #expect(!stopped.stdout.contains("reply: "))

            // A full 5-hour window: usageLimitReached, with the plan, after the custom backoff's retries.
            let account = try #require(try await testbed.control("/_emulator/accounts").string(0, "account_id"))
            _ = try await testbed.control("/_emulator/accounts/\(account)/usage", method: "POST", body: #"{"five_hour_used_percent":100}"#)
            let full = try await runProcess(example, testbed.service + ["more"], timeout: .seconds(180))
            #expect(full.status == 75, "\(full.stdout)\n\(full.stderr)")
            #expect(full.stdout.contains("usage limit reached on the "), "\(full.stdout)")
        }
    }
}

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
}

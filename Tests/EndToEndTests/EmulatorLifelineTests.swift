import ChappieTestSupport
import Foundation
import Testing

@Suite("chappie-emulator --stop-when-stdin-closes: no emulator outlives the process that started it", .tags(.slow))
struct EmulatorLifelineTests {
    @Test("When the other end of its standard input closes (as when its parent dies), the emulator stops cleanly")
    func stopsWhenStdinCloses() async throws {
        let lifeline = try ChildPipe(), output = try ChildPipe()
        let emulator = try ChildProcess(
            try BuiltProducts.executable("chappie-emulator"), ["--port", "0", "--stop-when-stdin-closes"],
            stdin: .descriptor(lifeline.reading.fileDescriptor), stdout: .descriptor(output.writing.fileDescriptor))
        try lifeline.reading.close()
        try output.writing.close()
        // It serves while the pipe is open.
        let first = await output.reading.firstLine()
        #expect(first.hasPrefix("listening on http://127.0.0.1:"))
        try await Task.sleep(for: .milliseconds(300))
        #expect(emulator.isRunning)
        try lifeline.writing.close()
        for _ in 0..<600 where emulator.isRunning { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!emulator.isRunning, "the emulator kept running after its standard input closed")
        if emulator.isRunning { kill(emulator.processIdentifier, SIGKILL) }
        #expect(await emulator.terminationStatus == 0)
    }
}

public import Foundation

/// Runs a command on a pseudo-terminal (its standard streams, as in a terminal emulator) and types
/// answers to its prompts: each `(prompt, answer)` pair waits until the output so far shows
/// `prompt`, then types `answer`. What it printed to the terminal (both streams, as a user sees
/// them) comes back as `stdout`, with its exit status. Python holds the terminal: Swift's Glibc
/// module has neither `posix_openpt` nor a non-variadic `ioctl`.
public func runOnTerminal(
    _ executable: URL, _ arguments: [String], answers: [(prompt: String, answer: String)] = [], environment: [String: String?] = [:],
    timeout: Duration = .seconds(60), directory: URL? = nil
) async throws -> ProcessResult {
    let holder = """
        import json, os, pty, sys
        answers = json.loads(sys.argv[1])
        pid, master = pty.fork()
        if pid == 0:
            os.execv(sys.argv[2], sys.argv[2:])
        seen = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
            seen += chunk
            if answers and answers[0][0].encode() in seen:
                os.write(master, answers.pop(0)[1].encode())
                seen = b""
        _, status = os.waitpid(pid, 0)
        sys.stderr.write(str(os.waitstatus_to_exitcode(status)))
        """
    let pairs = try JSONSerialization.data(withJSONObject: answers.map { [$0.prompt, $0.answer] })
    let result = try await runProcess(
        URL(fileURLWithPath: "/usr/bin/python3"), ["-c", holder, String(decoding: pairs, as: UTF8.self), executable.path] + arguments,
        environment: environment, timeout: timeout, directory: directory)
    return ProcessResult(status: Int32(result.stderr) ?? -1, stdout: result.stdout.replacingOccurrences(of: "\r\n", with: "\n"), stderr: "")
}

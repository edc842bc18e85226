import ChappieTestSupport
import Foundation
import Testing

/// A terminal closed under chappie (an SSH session dropped, a laptop lid shut) is Ctrl-C, never a
/// crash: its writes fail with `EIO`, and the refresh in flight is still stored (issue 40, item 0).
@Suite("A closed terminal stops chappie as Ctrl-C does", .tags(.slow))
struct ClosedTerminalEndToEndTests {
    @Test(
        "A terminal closed while the issuer holds a refresh: chappie stores the answer, does not crash, and the account works after",
        .timeLimit(.minutes(3)), arguments: [["refresh", "closedterm"], ["ask", "hi"]])
    func refreshInFlight(_ command: [String]) async throws {
        // Access tokens of 30 s: ask refreshes first, inside the streaming client.
        let testbed = try await ChappieTestbed.start(emulatorArguments: ChappieTestbed.autoApproving + ["--access-token-ttl", "30"])
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "closedterm"]).status == 0)
            _ = try await testbed.control("/_emulator/faults", method: "POST", body: #"{"kind": "hold", "path": "/oauth/token", "count": 1}"#)
            let terminal = try await PseudoTerminal(testbed, command)
            while try await testbed.control("/_emulator/stats").int("held") != 1, terminal.isRunning { try await Task.sleep(for: .milliseconds(20)) }
            #expect(terminal.isRunning, "chappie waits for the held refresh")
            let handled = try #require(PseudoTerminal.signalsHandled(by: terminal.chappie))
            async let status = terminal.close()
            // The hang-up reaches chappie's signal thread before the issuer answers.
            while terminal.isRunning, (PseudoTerminal.signalsHandled(by: terminal.chappie) ?? 0) <= handled {
                try await Task.sleep(for: .milliseconds(10))
            }
            _ = try await testbed.control("/_emulator/release", method: "POST")
            // Its refresh done and stored, chappie ends as it would have (0), or as stopped (130);
            // never by a signal of its own (a trap on the dead terminal was SIGILL, -4 here).
            let ended = try await status
            #expect(ended == 0 || ended == 130, "\(ended)")

            let again = try await testbed.chappie(["refresh", "closedterm"])
            #expect(again.status == 0, "the rotated token was stored: \(again.stderr)")
            #expect(try await testbed.chappie(["token", "closedterm"]).status == 0)
            let stats = try await testbed.control("/_emulator/stats")
            #expect(stats.int("refresh", "reuse_detected") == 0, "\(stats)")
        }
    }

    @Test("A terminal closed while a sign-in waits for its code: chappie stops as by Ctrl-C", .timeLimit(.minutes(3)))
    func signInWaiting() async throws {
        // Codes are never approved: the sign-in waits, showing its code, until the terminal goes.
        let testbed = try await ChappieTestbed.start(emulatorArguments: ["--device-code-interval", "1"])
        try await whileRunning(testbed) {
            let terminal = try await PseudoTerminal(testbed, ["accounts", "add", "waiting"])
            while try await testbed.control("/_emulator/stats").int("device_codes", "issued") ?? 0 < 1, terminal.isRunning {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(terminal.isRunning)
            #expect(try await terminal.close() == 130, "stopped as by Ctrl-C, not by a signal of its own")
            #expect(try await testbed.chappie(["accounts", "list"]).stdout.contains("No accounts"))
        }
    }
}

/// A pseudo-terminal whose slave end is a child's controlling terminal and standard streams, as a
/// terminal emulator or sshd gives a login shell, held by a small Python program: Swift's Glibc
/// module has neither `posix_openpt` nor a non-variadic `ioctl`. Closing its master is the terminal
/// going away.
private struct PseudoTerminal {
    /// The Python side: opens the terminal, starts the command as a session leader on it (SIGINT
    /// and SIGHUP at their default, as a login shell leaves them), says its pid, reads and drops what
    /// it prints, closes the master when its own standard input ends, and says how the command ended.
    private static let holder = """
        import fcntl, os, pty, select, signal, sys, termios
        master, slave = pty.openpty()
        pid = os.fork()
        if pid == 0:
            os.setsid()
            os.close(master)
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            for stream in (0, 1, 2): os.dup2(slave, stream)
            os.close(slave)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            os.execv(sys.argv[1], sys.argv[1:])
        os.close(slave)
        print(pid, flush=True)
        while True:
            ready, _, _ = select.select([master, 0], [], [])
            if master in ready:
                try:
                    os.read(master, 4096)
                except OSError:
                    pass
            if 0 in ready and not os.read(0, 1):
                break
        os.close(master)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)
        """

    let process: ChildProcess
    /// The command's process id.
    let chappie: pid_t
    private let input: ChildPipe
    private let output: ChildPipe

    /// Runs `chappie` with `arguments` and the testbed's service options, in the testbed's
    /// environment as `ChappieRunner` gives it.
    init(_ testbed: ChappieTestbed, _ arguments: [String]) async throws {
        input = try ChildPipe()
        output = try ChildPipe()
        process = try ChildProcess(
            URL(fileURLWithPath: "/usr/bin/python3"),
            ["-c", Self.holder, try BuiltProducts.executable("chappie").path] + arguments + testbed.service,
            environment: [
                "HOME": testbed.userHome.path, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil, "CHAPPIE_ACCOUNT": nil, "CODEX_HOME": nil,
            ],
            directory: testbed.home, stdin: .descriptor(input.reading.fileDescriptor), stdout: .descriptor(output.writing.fileDescriptor))
        try input.reading.close()
        try output.writing.close()
        chappie = pid_t(await output.reading.firstLine()) ?? -1
    }

    /// Whether the command still runs (not yet reaped by the holder).
    var isRunning: Bool { kill(chappie, 0) == 0 && !Self.isZombie(chappie) }

    /// Closes the master: the kernel hangs the slave up, sends SIGHUP to the session's leader, and
    /// every later write there fails with `EIO`. Then waits for the command: its exit status, or
    /// minus the signal that ended it.
    func close() async throws -> Int32 {
        try input.writing.close()
        let status = await output.reading.firstLine()
        await process.waitUntilExit()
        return Int32(status) ?? Int32.min
    }

    private static func isZombie(_ process: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(process)/stat", encoding: .utf8) else { return true }
        return stat.split(separator: ")").last?.dropFirst().first == "Z"
    }

    /// How many times chappie's signal thread (`chappie-signals`) has gone back to waiting: it
    /// blocks in a read between signals, so the count grows once a signal has been handled.
    static func signalsHandled(by process: pid_t) -> Int? {
        let tasks = "/proc/\(process)/task"
        for thread in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            guard let name = try? String(contentsOfFile: "\(tasks)/\(thread)/comm", encoding: .utf8), name.hasPrefix("chappie-signals"),
                let status = try? String(contentsOfFile: "\(tasks)/\(thread)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") })
            else { continue }
            return Int(line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}

public import Foundation
import Synchronization

/// The built executables of this package, found next to the running test bundle.
public enum BuiltProducts {
    /// The build products folder (`.build/<triple>/debug`).
    public static var directory: URL {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: executable).deletingLastPathComponent()
    }

    /// The path of a built executable such as `chappie-emulator`, or an error saying how to build it.
    ///
    /// `chappie` is the front binary as `make install` lays it out: `bin/chappie`, with the full
    /// binary at `libexec/chappie/chappie-full` (``installedLayout``), so that every test that runs
    /// chappie runs the installed layout. The build directory's layout (both side by side) is
    /// what `make demo` and `make interop` run.
    public static func executable(_ name: String) throws -> URL {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw EmulatorHarnessError(message: "\(url.path) is missing: run `swift build` (or `make test`) before `swift test`")
        }
        guard name == "chappie" else { return url }
        _ = try executable("chappie-full")
        return try installedLayout.get().appendingPathComponent("bin/chappie")
    }

    /// `PREFIX` of an installed layout made once per test process from the build: a copy of the
    /// front binary in `bin/`, and the full binary linked in `libexec/chappie/`.
    public static let installedLayout: Result<URL, any Error> = Result {
        let prefix = directory.appendingPathComponent("installed-layout/\(getpid())")
        let manager = FileManager.default
        try? manager.removeItem(at: prefix)
        try manager.createDirectory(at: prefix.appendingPathComponent("bin"), withIntermediateDirectories: true)
        try manager.createDirectory(at: prefix.appendingPathComponent("libexec/chappie"), withIntermediateDirectories: true)
        try manager.copyItem(at: directory.appendingPathComponent("chappie"), to: prefix.appendingPathComponent("bin/chappie"))
        try manager.createSymbolicLink(
            at: prefix.appendingPathComponent("libexec/chappie/chappie-full"), withDestinationURL: directory.appendingPathComponent("chappie-full"))
        // Layouts of test processes that have ended.
        for old in (try? manager.contentsOfDirectory(atPath: prefix.deletingLastPathComponent().path)) ?? [] {
            if let pid = Int32(old), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH {
                try? manager.removeItem(at: prefix.deletingLastPathComponent().appendingPathComponent(old))
            }
        }
        return prefix
    }
}

/// What a finished process left behind.
public struct ProcessResult: Sendable {
    /// The exit status (or 128 + signal).
    public var status: Int32
    /// Everything written to standard output.
    public var stdout: String
    /// Everything written to standard error.
    public var stderr: String
}

/// Runs an executable to completion, killing it after `timeout`.
///
/// - Parameters:
///   - executable: The program.
///   - arguments: Its arguments.
///   - environment: Variables added to (or, with a `nil` value, removed from) this process's environment.
///   - input: What it reads on standard input; nothing (`/dev/null`) by default.
///   - timeout: How long it may run before it is killed.
///   - directory: Its working directory; this process's by default.
public func runProcess(
    _ executable: URL, _ arguments: [String], environment: [String: String?] = [:], input: String? = nil, timeout: Duration = .seconds(30),
    directory: URL? = nil
) async throws -> ProcessResult {
    let output = try ChildPipe(), error = try ChildPipe()
    let stdin = try input.map { _ in try ChildPipe() }
    let process = try ChildProcess(
        executable, arguments, environment: environment, directory: directory,
        stdin: stdin.map { .descriptor($0.reading.fileDescriptor) } ?? .null,
        stdout: .descriptor(output.writing.fileDescriptor), stderr: .descriptor(error.writing.fileDescriptor))
    // The parent's copies of the child's ends must go, or reading never sees the end.
    try output.writing.close()
    try error.writing.close()
    if let stdin, let input {
        try stdin.reading.close()
        stdin.writing.write(Data(input.utf8))
        try? stdin.writing.close()
    }
    // Read both pipes while the process runs, so a full pipe cannot block it.
    async let out = output.reading.read()
    async let err = error.reading.read()
    let deadline = ContinuousClock.now + timeout
    while process.isRunning {
        if ContinuousClock.now > deadline {
            process.terminate()
            break
        }
        try await Task.sleep(for: .milliseconds(20))
    }
    await process.waitUntilExit()
    return ProcessResult(
        status: await process.terminationStatus, stdout: String(decoding: await out, as: UTF8.self),
        stderr: String(decoding: await err, as: UTF8.self))
}

/// Emulator processes still running, killed when the test process exits however the tests ended,
/// so that no emulator outlives a test run.
private let liveEmulators: Mutex<Set<pid_t>> = {
    atexit {
        for pid in liveEmulators.withLock({ $0 }) { kill(pid, SIGKILL) }
    }
    return Mutex([])
}()

/// `chappie-emulator` running as its own process, as `make demo` runs it.
public final class EmulatorProcess: Sendable {
    /// The process.
    public let process: ChildProcess
    /// The port it printed on its first line.
    public let port: Int
    /// `https` when it was started with `--tls`, else `http`.
    public let scheme: String
    /// With `--tls`: the PEM file of its certificate authority, for clients to trust.
    public let authorityFile: URL?
    /// The writing end of the emulator's standard input, held for its life: when this process
    /// ends, however it ends, the kernel closes it and the emulator stops.
    private let lifeline: FileHandle

    /// Starts the emulator with extra arguments and waits (at most 20 s) for its first line. With
    /// `--tls`, its authority is written to a temporary file (``authorityFile``).
    public init(arguments: [String] = []) async throws {
        let output = try ChildPipe(), lifeline = try ChildPipe()
        var arguments = arguments
        let authorityFile: URL? =
            arguments.contains("--tls") ? try TestTokens.temporaryDirectory("chappie-emulator-ca").appendingPathComponent("ca.pem") : nil
        if let authorityFile { arguments += ["--tls-ca-out", authorityFile.path] }
        let scheme = authorityFile == nil ? "http" : "https"
        let process = try ChildProcess(
            try BuiltProducts.executable("chappie-emulator"), ["--port", "0", "--stop-when-stdin-closes"] + arguments,
            stdin: .descriptor(lifeline.reading.fileDescriptor), stdout: .descriptor(output.writing.fileDescriptor), stderr: .inherit)
        try output.writing.close()
        try lifeline.reading.close()
        let firstLine = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask { await output.reading.firstLine() }
            group.addTask {
                try await Task.sleep(for: .seconds(20))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let firstLine, firstLine.hasPrefix("listening on \(scheme)://127.0.0.1:"),
            let port = Int(firstLine.split(separator: ":").last ?? "")
        else {
            kill(process.processIdentifier, SIGKILL)
            await process.waitUntilExit()
            throw EmulatorHarnessError(message: "chappie-emulator did not print its address; first line: \(firstLine ?? "none")")
        }
        self.process = process
        self.port = port
        self.scheme = scheme
        self.authorityFile = authorityFile
        self.lifeline = lifeline.writing
        _ = liveEmulators.withLock { $0.insert(process.processIdentifier) }
    }

    /// `http://127.0.0.1:PORT`.
    public var issuer: String { "\(scheme)://127.0.0.1:\(port)" }
    /// `http://127.0.0.1:PORT/backend-api` (https with `--tls`).
    public var backend: String { "\(issuer)/backend-api" }

    /// Sends SIGTERM and waits (at most 10 s) for the process to exit; returns its status.
    @discardableResult
    public func stop() async -> Int32 {
        if process.isRunning { process.terminate() }
        for _ in 0..<500 where process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        await process.waitUntilExit()
        _ = liveEmulators.withLock { $0.remove(process.processIdentifier) }
        return await process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

extension Dictionary where Key == String, Value == String? {
    /// Marks the variables removed from a child's environment (a `nil` value), except those the
    /// caller gave: `environment[key] = nil` would drop the entry instead, and the child would
    /// inherit the variable.
    public mutating func unsetting(_ keys: String...) {
        for key in keys where index(forKey: key) == nil { updateValue(nil, forKey: key) }
    }
}

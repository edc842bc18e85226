public import Foundation
import Synchronization

/// A child process started with `posix_spawn`, for the tests.
///
/// Not Foundation's `Process`: on Linux its `run()` reads `/proc/self/fd` past the end of a
/// directory entry and crashes now and then (swift-corelibs-foundation #5472, in Swift 6.3.1). A
/// crashed test process also leaves its emulators running, holding `swift test`'s pipes open.
/// Here the child gets exactly its standard streams: every other descriptor is closed in it.
public final class ChildProcess: Sendable {
    /// What a standard stream of the child is.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// The test process's own.
        case inherit
        /// This descriptor (the parent keeps its copy).
        case descriptor(Int32)
        /// For standard input only: a pipe whose other end this object holds for its life. When the
        /// test process ends, however it ends, the kernel closes it, and a child that stops when its
        /// input ends (`--stop-when-stdin-closes`) goes with it.
        case lifeline
    }

    /// The child's process id.
    public let processIdentifier: pid_t
    /// The writing end of a ``Stream/lifeline``.
    private let lifeline: FileHandle?
    /// Its wait status, once reaped.
    private let reaped = Mutex<Int32?>(nil)

    /// Starts `executable` with `arguments`.
    ///
    /// - Parameters:
    ///   - environment: Variables added to (or, with a `nil` value, removed from) this process's environment.
    ///   - directory: Its working directory; this process's by default.
    /// - Throws: `POSIXError` when it cannot be started.
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String?] = [:], directory: URL? = nil,
        stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null
    ) throws {
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let pipe: ChildPipe? = if case .lifeline = stdin { try ChildPipe() } else { nil }
        for (target, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .inherit: break
            case .descriptor(let descriptor): posix_spawn_file_actions_adddup2(&actions, descriptor, target)
            case .lifeline: posix_spawn_file_actions_adddup2(&actions, pipe!.reading.fileDescriptor, target)
            }
        }
        if let closeFrom = Self.closeFrom { _ = closeFrom(&actions, 3) }
        if let directory {
            guard let changeDirectory = Self.changeDirectory else { throw POSIXError(.ENOSYS) }
            _ = directory.path.withCString { changeDirectory(&actions, $0) }
        }
        var pid: pid_t = 0
        var result = posix_spawn(&pid, executable.path, &actions, nil, argv, envp)
        // A binary a test has just copied is "busy" while another thread's child, forked before its
        // copy was closed, still holds the copy's descriptor until it execs: that passes at once.
        for _ in 0..<50 where result == ETXTBSY {
            usleep(20_000)
            result = posix_spawn(&pid, executable.path, &actions, nil, argv, envp)
        }
        try pipe?.reading.close()
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL) }
        processIdentifier = pid
        lifeline = pipe?.writing
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not show: every descriptor from 3 up is closed in the child.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29 and later), likewise not shown.
    private static let changeDirectory: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addchdir_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32).self)
    }()

    /// Whether it has not exited yet (reaping it when it has).
    public var isRunning: Bool {
        reaped.withLock { status in
            guard status == nil else { return false }
            var raw: Int32 = 0
            guard waitpid(processIdentifier, &raw, WNOHANG) == processIdentifier else { return true }
            status = raw
            return false
        }
    }

    /// Sends SIGTERM.
    public func terminate() {
        if isRunning { kill(processIdentifier, SIGTERM) }
    }

    /// Waits until it has exited, sleeping between looks: a blocking wait would hold one of the
    /// cooperative pool's threads (two on a 2-core machine) and stall every other test meanwhile.
    public func waitUntilExit() async {
        var pause = 2
        while isRunning {
            // A cancelled task's sleep returns at once: then wait a little on the thread rather
            // than spin (cancellation comes at the end of a test, and the child is going).
            if (try? await Task.sleep(for: .milliseconds(pause))) == nil { usleep(useconds_t(pause * 1000)) }
            pause = min(pause * 2, 50)
        }
    }

    /// The exit status, or the number of the signal that ended it (as Foundation's `Process` says),
    /// once it has exited; waits for that.
    public var terminationStatus: Int32 {
        get async {
            await waitUntilExit()
            return exitStatus ?? 0
        }
    }

    /// The exit status (or the signal that ended it) if it has exited, without waiting.
    public var exitStatus: Int32? {
        guard !isRunning, let raw = reaped.withLock({ $0 }) else { return nil }
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : signal
    }
}

/// A pipe whose two ends are close-on-exec: a child gets one only as a standard stream.
public struct ChildPipe: Sendable {
    /// The end to read.
    public let reading: FileHandle
    /// The end to write.
    public let writing: FileHandle

    /// Makes the pipe.
    public init() throws {
        var ends: [Int32] = [0, 0]
        // pipe2 is not in Swift's Glibc module; children close everything above 2 anyway (closeFrom).
        guard pipe(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        reading = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        writing = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
    }
}

extension FileHandle {
    /// Reads on a thread of its own until `done` says the bytes so far are enough, or the other
    /// end closes; what was read. A blocking read on the cooperative pool (two threads on a
    /// 2-core machine) would stall every other test while a slow child runs.
    public func read(until done: @escaping @Sendable (Data) -> Bool = { _ in false }) async -> Data {
        await withCheckedContinuation { continuation in
            Thread {
                var data = Data()
                while !done(data) {
                    // What is there now, not a full buffer: `read(upToCount:)` waits for all of it.
                    let chunk = self.availableData
                    if chunk.isEmpty { break }
                    data.append(chunk)
                }
                continuation.resume(returning: data)
            }.start()
        }
    }

    /// The first line a child writes here (without its newline), read one byte at a time so that
    /// nothing after it is taken; empty when the other end closes first.
    public func firstLine() async -> String {
        await withCheckedContinuation { continuation in
            Thread {
                var bytes: [UInt8] = []
                while let byte = try? self.read(upToCount: 1)?.first, byte != 0x0A { bytes.append(byte) }
                continuation.resume(returning: String(decoding: bytes, as: UTF8.self))
            }.start()
        }
    }
}

import ChappieCore
import ChappieStore
import Foundation

extension LeaseService {
    /// Runs a command under a lease (`chappie lease run`): takes the lease, starts the command with
    /// ``Granted/environment`` added to chappie's, renews the lease every third of its time to live
    /// while the command runs, and gives it back when the command ends, however it ends.
    ///
    /// The command starts with the signal dispositions and mask chappie was started with. Passing
    /// chappie's own signals on to it is the caller's, from `started` (the CLI: SIGTERM and SIGHUP
    /// passed on, Ctrl-C left to the command, which has it from the terminal).
    ///
    /// - Parameters:
    ///   - started: Called with the command's process id once it runs.
    ///   - report: Told of waiting for a slot, of the lease taken, and of a renewal that failed.
    /// - Returns: The lease, and the command's exit status (128 + the signal that ended it; 127
    ///   when it is not found, 126 when it cannot run).
    public func run(
        _ command: [String], request: LeaseRequest, started: @Sendable (Int32) -> Void = { _ in }, report: @escaping @Sendable (String) -> Void
    ) async throws -> (granted: Granted, status: Int32) {
        precondition(!command.isEmpty, "an empty command")
        let granted = try await acquireHolding(request, waiting: report)
        report("lease \(granted.lease.id.uuidString.lowercased()) on \(granted.account.name) until renewed or released")
        // While the job runs in the account's Codex home, the account neither leaves that home nor
        // is removed (`exec`'s in-use lock, held shared by this process until the job ends).
        let inUse: Int32
        do {
            if let held = granted.inUseLock { inUse = held } else { inUse = try await holdInUse(granted) }
        } catch {
            try? await Task { try await release(granted.lease.id) }.value
            throw error
        }
        defer { if inUse >= 0 { close(inUse) } }
        let child: pid_t
        do {
            child = try Self.spawn(command, adding: granted.environment, removing: granted.removedVariables)
        } catch {
            try? await release(granted.lease.id)
            return (granted, error.status)
        }
        started(child)
        let renewing = Task {
            let every = max(.seconds(1), request.ttl / 3)
            while !Task.isCancelled {
                try? await Task.sleep(for: every)
                if Task.isCancelled { break }
                do {
                    _ = try await renew(granted.lease.id, ttl: request.ttl)
                } catch {
                    report("renewing lease \(granted.lease.id.uuidString.lowercased()) failed: \(FailureDescription(error)?.message ?? "\(error)")")
                }
            }
        }
        let status = await Self.waitForExit(child)
        renewing.cancel()
        // Given back in a task of its own: whatever happens to the caller, the slot is freed.
        try? await Task { try await release(granted.lease.id) }.value
        return (granted, status)
    }

    /// The in-use lock of the home the lease hands out, taken shared under the account's refresh
    /// lock once the account is seen to own it still (a switch may have moved it meanwhile); -1
    /// when the lease hands out none.
    ///
    /// - Throws: ``ServiceError`` `.invalidInput` when the account left the home meanwhile.
    private func holdInUse(_ granted: Granted) async throws -> Int32 {
        guard let path = granted.codexHome else { return -1 }
        let mirror = CodexMirror(home: URL(fileURLWithPath: path))
        return try await store.withRefreshLock(on: granted.account) {
            guard try await store.account(id: granted.account.id).codexHome == path else {
                throw ServiceError(.invalidInput, "\(granted.account.name) left \(path) meanwhile; try again")
            }
            let descriptor = open(mirror.inUseURL.path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard descriptor >= 0, flock(descriptor, LOCK_SH) == 0 else {
                if descriptor >= 0 { close(descriptor) }
                throw ServiceError(.invalidInput, "cannot take the in-use lock in \(path): \(String(cString: strerror(errno)))")
            }
            return descriptor
        }
    }

    /// Why a command could not start, with its exit status.
    struct SpawnFailure: Error {
        var status: Int32
    }

    /// Starts `command` (found on `PATH`) with chappie's standard streams and environment, less
    /// `removed` and plus `adding`, its signals as chappie was started with, and none of chappie's
    /// other descriptors.
    private static func spawn(_ command: [String], adding environment: [String: String], removing removed: [String]) throws(SpawnFailure) -> pid_t {
        ProcessReplacement.markDescriptorsCloseOnExec()
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        let inherited = ProcessReplacement.inheritedSignals
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in ProcessReplacement.changedSignals where !inherited.ignored.contains(number) { sigaddset(&defaults, number) }
        var mask = inherited.mask
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var merged = ProcessInfo.processInfo.environment
        for name in removed { merged[name] = nil }
        for (name, value) in environment { merged[name] = value }
        var variables: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        var arguments: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer {
            for pointer in variables { free(pointer) }
            for pointer in arguments { free(pointer) }
        }
        var child: pid_t = 0
        let result = posix_spawnp(&child, command[0], nil, &attributes, &arguments, &variables)
        guard result == 0 else {
            FileHandle.standardError.write(Data("chappie: cannot run \(command[0]): \(String(cString: strerror(result)))\n".utf8))
            throw SpawnFailure(status: result == ENOENT ? 127 : 126)
        }
        return child
    }

    /// Waits for the command on a thread of its own (`waitpid` blocks); its exit status, or 128 +
    /// the signal that ended it.
    private static func waitForExit(_ child: pid_t) async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread {
                var status: Int32 = 0
                while waitpid(child, &status, 0) < 0, errno == EINTR {}
                let signalled = status & 0x7f
                continuation.resume(returning: signalled == 0 ? (status >> 8) & 0xff : 128 + signalled)
            }.start()
        }
    }
}

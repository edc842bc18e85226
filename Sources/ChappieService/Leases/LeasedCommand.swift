import ChappieCore
import ChappieStore
import Foundation

extension LeaseService {
    /// Runs a command under a lease (`chappie lease run`): takes the lease, starts the command with
    /// ``Granted/environment`` added to chappie's, renews the lease every third of its time to live
    /// while the command runs, and gives it back when the command ends, however it ends.
    ///
    /// The command starts with the signal dispositions and mask chappie was started with; the
    /// signals chappie gets reach it through `control` (the CLI's handler calls
    /// ``JobControl/signal(_:)``).
    ///
    /// - Parameters:
    ///   - report: Told of waiting for a slot, of the lease taken, and of a renewal that failed.
    /// - Returns: The command's exit status (128 + the signal that ended it; 127 when it is not
    ///   found, 126 when it cannot run).
    public func run(
        _ command: [String], request: LeaseRequest, control: JobControl = JobControl(), report: @escaping @Sendable (String) -> Void
    ) async throws -> Int32 {
        precondition(!command.isEmpty, "an empty command")
        let seat = try await seat(request, report: report)
        let status: Int32
        do {
            let child = try ChildCommand.spawn(command, adding: seat.environment, removing: seat.removedVariables)
            control.running(child)
            status = await ChildCommand.wait(for: child).status
            control.ended()
        } catch {
            report(error.reason)
            status = error.status
        }
        await seat.release()
        return status
    }

    /// A lease taken for a job run from here: the home it hands out held in use, the lease renewed
    /// every third of its time to live until the seat is released, which gives the lease back.
    func seat(_ request: LeaseRequest, report: @escaping @Sendable (String) -> Void) async throws -> JobSeat {
        let granted = try await acquireHolding(request, waiting: report)
        let id = granted.lease.id
        report("lease \(id.uuidString.lowercased()) on \(granted.account.name) until renewed or released")
        // While the job runs in the account's Codex home, the account neither leaves that home nor
        // is removed (`exec`'s in-use lock, held shared by this process until the job ends).
        let inUse: Int32
        do {
            if let held = granted.inUseLock { inUse = held } else { inUse = try await holdInUse(granted) }
        } catch {
            try? await Task { try await release(id) }.value
            throw error
        }
        let renewing = Task {
            let every = max(.seconds(1), request.ttl / 3)
            while !Task.isCancelled {
                try? await Task.sleep(for: every)
                if Task.isCancelled { break }
                do {
                    _ = try await renew(id, ttl: request.ttl)
                } catch {
                    report("renewing lease \(id.uuidString.lowercased()) failed: \(FailureDescription(error)?.message ?? "\(error)")")
                }
            }
        }
        return JobSeat(
            account: granted.account, codexHome: granted.codexHome.map { URL(fileURLWithPath: $0) }, environment: granted.environment,
            removedVariables: granted.removedVariables
        ) {
            renewing.cancel()
            if inUse >= 0 { close(inUse) }
            // Given back in a task of its own: whatever happens to the caller, the slot is freed.
            try? await Task { try await release(id) }.value
        }
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
}

import ChappieCore
package import ChappieNet
public import Foundation
package import Logging
import Synchronization

/// Sends each alert to every target, each delivery in a task of its own, so that a slow or dead
/// webhook never holds up a refresh or a poll.
///
/// A webhook gets a JSON `POST` (``AlertEvent/json``); any 2xx is delivered. Anything else, or no
/// answer within 10 seconds, is tried again after `retryDelay`, doubling, up to ``retries`` times
/// (with the default 10 s: waits of 310 s, and at most 6 × 10 s of attempts, about 6 minutes in all). The command is run once, with
/// no shell, the event on its standard input; it has 30 seconds. A delivery that fails for good
/// is logged (the webhook redacted) and counted.
package struct AlertDispatcher: Sendable {
    /// What a delivery came to, for the metrics.
    package enum Outcome: String, Sendable {
        case delivered, failed
    }

    /// Retries after the first attempt of a webhook.
    package static let retries = 5

    let targets: AlertTargets
    let http: ChappieHTTPClient
    let retryDelay: Duration
    let logger: Logger
    /// Told of each delivery's end: the target kind (`webhook` or `command`) and the outcome.
    let record: @Sendable (String, Outcome) -> Void
    let sleep: @Sendable (Duration) async throws -> Void
    private let inFlight = InFlight()

    package init(
        targets: AlertTargets, http: ChappieHTTPClient, retryDelay: Duration = .seconds(10), logger: Logger,
        record: @escaping @Sendable (String, Outcome) -> Void = { _, _ in },
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.targets = targets
        self.http = http
        self.retryDelay = retryDelay
        self.logger = logger
        self.record = record
        self.sleep = sleep
    }

    /// Starts delivering `event` to every target; the task ends when every delivery has.
    @discardableResult
    package func send(_ event: AlertEvent) -> Task<Void, Never> {
        let body = event.json
        logger.notice("alert", metadata: ["event": "\(event.event.rawValue)", "account": "\(event.account)", "message": "\(event.message)"])
        let id = inFlight.next()
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                for webhook in targets.webhooks {
                    group.addTask { await deliver(body, to: webhook, retries: Self.retries) }
                }
                if let command = targets.command {
                    group.addTask { await run(command, with: body) }
                }
            }
            inFlight.finished(id)
        }
        inFlight.started(id, task)
        return task
    }

    /// Waits up to `limit` for the deliveries under way (a daemon stopping), then stops the rest:
    /// each is then logged and counted as failed. Returns how many were stopped.
    @discardableResult
    package func drain(within limit: Duration) async -> Int {
        let deadline = ContinuousClock.now + limit
        while !inFlight.isEmpty, ContinuousClock.now < deadline {
            do { try await Task.sleep(for: .milliseconds(50)) } catch { break }
        }
        let left = inFlight.all()
        for task in left { task.cancel() }
        for task in left { await task.value }
        return left.count
    }

    private func deliver(_ body: Data, to webhook: URL, retries: Int) async {
        var request = ChappieHTTPRequest(url: webhook, method: .post, headers: ["Content-Type": "application/json"], body: body)
        // The path is where ntfy, Slack and Discord keep the secret: never in a debug log or an error.
        request.pathIsSecret = true
        request.totalTimeout = .seconds(10)
        // An http webhook is on loopback (AlertTargets.webhook): it must not go through a proxy in clear.
        request.bypassesProxy = webhook.scheme?.lowercased() == "http"
        var delay = retryDelay
        var problem = ""
        var attempts = 0
        for attempt in 0...retries {
            if attempt > 0 {
                do { try await sleep(delay) } catch { break }
                delay *= 2
            }
            attempts += 1
            do {
                let response = try await http.execute(request)
                if (200..<300).contains(response.status) {
                    record("webhook", .delivered)
                    return
                }
                problem = "HTTP \(response.status)"
            } catch {
                problem = "\(error)"
            }
        }
        record("webhook", .failed)
        logger.warning(
            "alert webhook failed", metadata: ["webhook": "\(AlertTargets.redacted(webhook))", "attempts": "\(attempts)", "error": "\(problem)"])
    }

    private func run(_ command: [String], with body: Data) async {
        let outcome = await Self.runCommand(command, input: body, limit: .seconds(30))
        record("command", outcome == nil ? .delivered : .failed)
        if let outcome {
            logger.warning(
                "alert command failed", metadata: ["command": "\(URL(fileURLWithPath: command[0]).lastPathComponent)", "error": "\(outcome)"])
        }
    }

    /// Runs `command` with `input` on its standard input (its output goes where chappie's does);
    /// `nil` when it exits 0 within `limit`, else why not.
    static func runCommand(_ command: [String], input: Data, limit: Duration) async -> String? {
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { return "no pipe: \(String(cString: strerror(errno)))" }
        for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let child: pid_t
        do {
            child = try ChildCommand.spawn(command, adding: [:], removing: [], standardInput: pipe[0], ownProcessGroup: true)
        } catch {
            close(pipe[0])
            close(pipe[1])
            return error.reason
        }
        close(pipe[0])
        // A command that does not read its input must not block chappie: the write happens on a thread of its
        // own (chappie ignores SIGPIPE, so a command that exits early ends the write with EPIPE).
        let writer = pipe[1]
        Thread {
            _ = input.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
            close(writer)
        }.start()
        let timer = Task {
            try await Task.sleep(for: limit)
            // The whole group: a shell's children too, which would otherwise hold chappie's output open.
            kill(-child, SIGKILL)
        }
        // A stopping daemon (drain) stops the command too.
        let end = await withTaskCancellationHandler {
            await ChildCommand.wait(for: child)
        } onCancel: {
            kill(-child, SIGKILL)
        }
        timer.cancel()
        switch end {
        case .exited(0): return nil
        case .exited(let status): return "it exited \(status)"
        case .signalled(let number): return number == SIGKILL ? "it took longer than \(limit)" : "signal \(number) ended it"
        }
    }
}

/// The deliveries under way, so that a stopping daemon can wait for them.
private final class InFlight: Sendable {
    private let tasks = Mutex<(next: Int, running: [Int: Task<Void, Never>], done: Set<Int>)>((0, [:], []))

    func next() -> Int {
        tasks.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
    }

    func started(_ id: Int, _ task: Task<Void, Never>) {
        tasks.withLock { state in
            // A delivery may end before it is noted as started.
            if state.done.remove(id) == nil { state.running[id] = task }
        }
    }

    func finished(_ id: Int) {
        tasks.withLock { state in
            if state.running.removeValue(forKey: id) == nil { state.done.insert(id) }
        }
    }

    var isEmpty: Bool { tasks.withLock { $0.running.isEmpty } }
    func all() -> [Task<Void, Never>] { tasks.withLock { Array($0.running.values) } }
}

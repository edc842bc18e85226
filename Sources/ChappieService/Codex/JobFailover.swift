public import ChappieCore
import ChappieNet
import ChappieText
import ChappieStore
public import Foundation
import Logging

/// `exec --failover` and `lease run --failover`: a Codex job that stops at its account's limit is
/// taken up again, in its own session, as the account with the most headroom.
///
/// chappie stays the job's parent. When the job exits non-zero, the account's usage is read
/// (never the job's output); if the account is at the service's limit, the session the job
/// wrote (``JobSession``) is resumed with ``ResumeCommand`` as the next account, in that account's
/// Codex home. Codex homes share their `sessions/` (``SharedCodexHome``), so the next account's
/// Codex finds the session.
public struct JobFailover: Sendable {
    /// What `--failover` was given.
    public struct Options: Sendable {
        /// How the job is taken up again.
        public var resume: ResumeCommand
        /// At most this many failovers (`--max-failovers`, default 3).
        public var maxFailovers: Int

        /// Options for `job`: `resume`, else Codex's resume of a `codex exec` job.
        ///
        /// - Throws: ``ServiceError`` `.invalidInput` when `resume` is `nil` and the job is not a
        ///   `codex exec` job, or when `resume` is not a command line with `{session}`.
        public init(job: [String], resume: String?, maxFailovers: Int = 3) throws(ServiceError) {
            if let resume { self.resume = try ResumeCommand(parsing: resume) } else { self.resume = try ResumeCommand.codexDefault(for: job) }
            self.maxFailovers = maxFailovers
        }
    }

    let store: any AccountStore
    let usage: UsageService
    let exec: ExecService
    let leases: LeaseService
    /// For the `failover` alert, sent to this machine's alert targets (``LocalSettings``).
    let http: ChappieHTTPClient

    /// `chappie exec --failover`: runs `command` as `account`, failing over as ``JobFailover`` says.
    ///
    /// - Parameters:
    ///   - control: Where chappie's signals go: to the run of the moment; after one, no failover.
    ///   - report: Told of each start ("running as work (5-hour 12 %)"), each failover, and why
    ///     there was none when the job failed.
    /// - Returns: The exit status of the last run (128 + the signal that ended it; 127 when it is
    ///   not found, 126 when it cannot run).
    public func exec(
        _ command: [String], as account: AccountName, options: Options, control: JobControl, report: @escaping @Sendable (String) -> Void
    ) async throws -> Int32 {
        let exec = exec
        let seat: @Sendable (AccountName) async throws -> JobSeat = { name in
            let plan = try await exec.prepare(name)
            if let problem = plan.sharingProblem { report("warning: \(problem)") }
            return JobSeat(account: plan.account, codexHome: plan.codexHome, environment: plan.environment) { close(plan.inUseLock) }
        }
        return try await run(command, options: options, first: try await seat(account), control: control, report: report) { excluded in
            try await seat(try await usage.best(maxAge: .seconds(120), excluding: excluded).account.name)
        }
    }

    /// `chappie lease run --failover`: runs `command` under a lease with a Codex home of the job's
    /// own (as `--codex-home private`); on failover the lease is given back before the next
    /// account is leased.
    public func leaseRun(
        _ command: [String], request: LeaseRequest, options: Options, control: JobControl, report: @escaping @Sendable (String) -> Void
    ) async throws -> Int32 {
        var request = request
        request.privateCodexHome = true
        let first = try await leases.seat(request, report: report)
        return try await run(command, options: options, first: first, control: control, report: report) { [request] excluded in
            var next = request
            next.account = nil
            next.excluded = excluded
            return try await leases.seat(next, report: report)
        }
    }

    /// Runs the job, then waits for the `failover` alerts it sent. A webhook is retried as the
    /// daemon retries it while the resumed job runs; once the job has ended, what is still being
    /// delivered gets ``alertsGrace``, then is stopped and logged as failed.
    private func run(
        _ command: [String], options: Options, first: JobSeat, control: JobControl, report: @escaping @Sendable (String) -> Void,
        next: @Sendable (Set<Int64>) async throws -> JobSeat
    ) async throws -> Int32 {
        var dispatcher: AlertDispatcher?
        do {
            let targets = try LocalSettings.load(from: store.location.directory).alertTargets()
            if !targets.isEmpty { dispatcher = AlertDispatcher(targets: targets, http: http, logger: Logger(label: "chappie.alerts")) }
        } catch {
            report("warning: no failover alerts: \(error.message)")
        }
        let status = try await runJob(command, options: options, first: first, control: control, report: report, next: next) { [dispatcher] event in
            dispatcher?.send(event)
        }
        if let stopped = await dispatcher?.drain(within: Self.alertsGrace), stopped > 0 {
            report("warning: \(stopped) failover alert\(stopped == 1 ? " was" : "s were") still being delivered when the job ended, and stopped")
        }
        return status
    }

    /// How long a finished job waits for its failover alerts still being delivered (a webhook
    /// retrying, an alert command running).
    static let alertsGrace = Duration.seconds(30)

    /// Runs the job in `first`, and while it stops at its account's limit, resumes it in the seat
    /// `next` gives (never an account in the set it is passed).
    private func runJob(
        _ command: [String], options: Options, first: JobSeat, control: JobControl, report: @Sendable (String) -> Void,
        next: @Sendable (Set<Int64>) async throws -> JobSeat, alert: @Sendable (AlertEvent) -> Void
    ) async throws -> Int32 {
        var seat = first
        var command = command
        var tried: Set<Int64> = []
        var failovers = 0
        var resumed: JobSession.Found?
        while true {
            tried.insert(seat.account.id)
            let standing = await standing(of: seat.account)
            if let full = standing.full {
                report("warning: \(seat.account.name) is at its limit (\(full)); the job may stop at once, and then goes on as another account")
            }
            report("running as \(seat.account.name) (\(standing.text))")
            let termination = await Self.runOnce(command, in: seat, control: control, watching: resumed, report: report)
            await seat.release()
            guard case .exited(let status) = termination.end, status != 0, status != 126, status != 127 else { return termination.end.status }
            if let number = control.stopRequested {
                report("the job exited \(status) after chappie was asked to stop (signal \(number)); no failover")
                return status
            }
            let name = seat.account.name
            let reading: ChappieUsageLimitSnapshot?
            do {
                reading = try await usage.poll(seat.account, tokenMargin: .seconds(300)).first
            } catch {
                // Ctrl-C reaches the job and chappie at once: the job may end before chappie has
                // taken the signal, which then stops the read. Said as the stop it is.
                if let number = control.stopRequested {
                    report("the job exited \(status) after chappie was asked to stop (signal \(number)); no failover")
                    return status
                }
                report(
                    "the job exited \(status); \(name)'s usage could not be read (\(FailureDescription(error)?.message ?? "\(error)")), so it is not failed over"
                )
                return status
            }
            // The service's limit, not chappie's reserve: Codex stops only at the former.
            guard let reading, reading.limitReached || (reading.bindingWindow?.usedPercent ?? 0) >= 100 else {
                report("the job exited \(status) with \(name) not at its limit; no failover")
                return status
            }
            let full = "\(name) reached its limit (\(Self.binding(reading)))"
            guard failovers < options.maxFailovers else {
                report("\(full); --max-failovers \(options.maxFailovers) reached, so the job stops here")
                return status
            }
            // A resumed run goes on in the session it resumed, whatever else it was seen holding.
            let found = termination.session
            guard let session = resumed ?? (try? found.get()) else {
                let reason = if case .failure(let unknown) = found { unknown.reason } else { "" }
                report("\(full), but its session is not known (\(reason)); resume it yourself with another account")
                return status
            }
            if let number = control.stopRequested {
                report("\(full); chappie was asked to stop (signal \(number)), so the job is not failed over")
                return status
            }
            let seated: JobSeat
            do {
                seated = try await next(tried)
            } catch {
                report("\(full); no other account can take the job over: \(FailureDescription(error)?.message ?? "\(error)")")
                return status
            }
            // A signal while the next account was made ready: nothing more starts.
            if let number = control.stopRequested {
                await seated.release()
                report("\(full); chappie was asked to stop (signal \(number)), so the job is not failed over")
                return status
            }
            var link: String?
            do {
                link = try seated.codexHome.flatMap { try JobSession.makeVisible(session, in: $0) }
            } catch {
                await seated.release()
                report("\(full); \(seated.account.name)'s Codex home cannot see the session: \(FailureDescription(error)?.message ?? "\(error)")")
                return status
            }
            failovers += 1
            try? await store.recordEvent(
                .failover, account: seated.account,
                detail:
                    "from \(name) (\(Self.binding(reading))) to \(seated.account.name): session \(session.id), failover \(failovers) of at most \(options.maxFailovers)"
            )
            report("\(full); resuming session \(session.id) as \(seated.account.name) (failover \(failovers) of \(options.maxFailovers))")
            if let link { report("linked the session into \(seated.account.name)'s Codex home: \(link)") }
            let binding = reading.bindingWindow
            alert(
                AlertEvent(
                    .failover, account: seated.account.name.rawValue, window: Headroom(reading, reservePercent: nil).bindingWindow,
                    usedPercent: binding?.usedPercent, resetsAt: binding?.resetsAt,
                    message: "\(full); its job resumed session \(session.id) as \(seated.account.name)", from: name.rawValue))
            command = options.resume.command(session: session.id)
            seat = seated
            resumed = session
        }
    }

    /// One run: how it ended, and the session it wrote.
    private static func runOnce(
        _ command: [String], in seat: JobSeat, control: JobControl, watching known: JobSession.Found?, report: @Sendable (String) -> Void
    ) async -> (end: ChildCommand.Termination, session: Result<JobSession.Found, JobSession.Unknown>) {
        let watch = seat.codexHome.map { JobSession(codexHome: $0, known: known) }
        let child: pid_t
        do {
            child = try ChildCommand.spawn(command, adding: seat.environment, removing: seat.removedVariables)
        } catch {
            report(error.reason)
            return (.exited(error.status), .failure(JobSession.Unknown(reason: error.reason)))
        }
        control.running(child)
        let watching = watch?.watch(child)
        let end = await ChildCommand.wait(for: child)
        control.ended()
        watching?.cancel()
        return (end, watch?.found() ?? .failure(JobSession.Unknown(reason: "the account has no Codex home here")))
    }

    /// "5-hour 12 %" by the account's reading, polled first when older than 2 minutes; the
    /// reading's age when it is still older (the poll failed), or that there is none. `full`
    /// describes a reading at the account's limit or reserve, with its reset.
    private func standing(of account: Account) async -> (text: String, full: String?) {
        _ = await usage.pollAll([account], maxAge: .seconds(120))
        guard let sample = try? await usage.latest()[account.id] else { return ("no usage reading", nil) }
        let now = Date()
        var text = Self.binding(sample.snapshot)
        if sample.observedAt.timeIntervalSince(now) < -120 {
            text += ", read \(RelativeTime.describe(sample.observedAt, now: now)) (the poll now failed)"
        }
        let headroom = Headroom(sample.snapshot, reservePercent: account.reservePercent)
        guard headroom.isFull else { return (text, nil) }
        let reset = sample.snapshot.bindingWindow?.resetsAt.map { "; it resets \(RelativeTime.describe($0, now: now))" } ?? ""
        return (text, Self.binding(sample.snapshot) + reset)
    }

    /// The binding window and its use: "5-hour 12 %", "weekly 100 %".
    static func binding(_ snapshot: ChappieUsageLimitSnapshot) -> String {
        guard let window = snapshot.bindingWindow, let kind = Headroom(snapshot, reservePercent: nil).bindingWindow else {
            return "no window reported"
        }
        return "\(kind.label) \(Int(window.usedPercent.rounded())) %"
    }
}

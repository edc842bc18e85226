public import ChappieCore
public import Foundation

/// `chappie guard`: whether an account has room for a job before it starts (a CI step, a script).
///
/// ```swift
/// let verdict = await HeadroomGuard(usage: services.usage, minimumPercent: 20).check([account])
/// if case .enough = verdict.outcome { /* run the job */ }
/// ```
public struct HeadroomGuard: Sendable {
    /// What the guard found for one account.
    public struct Verdict: Sendable {
        /// The answer.
        public enum Outcome: Sendable, Hashable {
            /// At least the minimum headroom in the binding window.
            case enough
            /// Less (or at its limit or reserve): the job should wait for the reset.
            case short
            /// The account must be signed in again.
            case signInRequired
            /// No reading could be had (the service unreachable, say); the message says why.
            case unknown(String)
        }

        /// The account judged.
        public var account: Account
        /// The answer.
        public var outcome: Outcome
        /// Its headroom by the reading used, when there is one.
        public var headroom: Headroom?
        /// When the binding window resets, when the reading says.
        public var resetsAt: Date?
        /// When the reading used was taken.
        public var observedAt: Date?
    }

    let usage: UsageService
    /// The headroom (percent of the binding window) an account needs.
    public var minimumPercent: Double
    /// Readings younger than this are used as they are; older ones are polled again.
    public var maxAge: Duration

    /// A guard asking for `minimumPercent` % headroom, from readings at most `maxAge` old.
    public init(usage: UsageService, minimumPercent: Double = 10, maxAge: Duration = .seconds(120)) {
        self.usage = usage
        self.minimumPercent = minimumPercent
        self.maxAge = maxAge
    }

    /// The verdict that speaks for several (`guard --any`): the account with the most headroom
    /// among those with enough; else the short one that frees up first; else one that could not be
    /// read; else one to sign in again.
    public static func deciding(_ verdicts: [Verdict]) -> Verdict? {
        if let best = verdicts.filter({ $0.outcome == .enough }).max(by: { ($0.headroom?.percent ?? 0) < ($1.headroom?.percent ?? 0) }) {
            return best
        }
        if let first = verdicts.filter({ $0.outcome == .short }).min(by: { ($0.resetsAt ?? .distantFuture) < ($1.resetsAt ?? .distantFuture) }) {
            return first
        }
        return verdicts.first { if case .unknown = $0.outcome { true } else { false } } ?? verdicts.first
    }

    /// Judges each account (polling those whose reading is too old), in the order given.
    public func check(_ accounts: [Account]) async -> [Verdict] {
        let candidates = accounts.filter { $0.status != .reauthRequired }
        let results = await usage.pollAll(candidates, maxAge: maxAge)
        let latest = (try? await usage.latest()) ?? [:]
        return accounts.map { account in
            guard account.status != .reauthRequired else { return Verdict(account: account, outcome: .signInRequired) }
            let result = results.first { $0.account.id == account.id }
            let sample = latest[account.id]
            // A failed poll leaves only an older reading, which is not good enough to say yes.
            if let error = result?.error, !(result?.cached ?? false) {
                if let recovery = (error as? any ChappieRecoverableError)?.recovery, recovery == .signInAgain {
                    return Verdict(account: account, outcome: .signInRequired)
                }
                return Verdict(account: account, outcome: .unknown(FailureDescription(error, account: account.name)?.message ?? "\(error)"))
            }
            guard let sample else { return Verdict(account: account, outcome: .unknown("no usage reading")) }
            let headroom = Headroom(sample.snapshot, reservePercent: account.reservePercent)
            let enough = !headroom.isFull && headroom.percent >= minimumPercent
            return Verdict(
                account: account, outcome: enough ? .enough : .short, headroom: headroom, resetsAt: sample.snapshot.bindingWindow?.resetsAt,
                observedAt: sample.observedAt)
        }
    }
}

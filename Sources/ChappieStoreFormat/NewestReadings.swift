/// Which reading of an account is its newest: one query both binaries run on the local store, so
/// that `accounts list` shows the same reading from either.
public enum NewestReadings {
    /// How far ahead of this machine's clock a reading may be dated and still count: another
    /// machine's clock, a second or two off. A reading dated later (a clock that ran ahead, a
    /// crafted backup, a pool row) would otherwise stay the newest, and fresh, until that date.
    public static let futureToleranceSeconds: Double = 300

    /// Each account's newest `codex` reading at `now` (Unix seconds): whole rows of
    /// `usage_samples`, leaving out a reading whose time is not a number, is before 1970, or is
    /// dated beyond ``futureToleranceSeconds`` ahead.
    public static func sql(now: Double) -> String {
        let latest = now.isFinite ? now + futureToleranceSeconds : 0
        return """
            SELECT s.* FROM usage_samples s
            JOIN (SELECT account_id, max(observed_at) AS newest FROM usage_samples
                  WHERE limit_id = 'codex' AND typeof(observed_at) IN ('real', 'integer') AND observed_at >= 0 AND observed_at <= \(latest)
                  GROUP BY account_id) n
              ON n.account_id = s.account_id AND n.newest = s.observed_at
            WHERE s.limit_id = 'codex'
            """
    }
}

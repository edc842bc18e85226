/// Which reading of an account is its newest: one query both binaries run on the local store, so
/// that `accounts list` shows the same reading from either.
public enum NewestReadings {
    /// How far ahead of this machine's clock a reading may be dated and still count: another
    /// machine's clock, a second or two off. A reading dated later (a clock that ran ahead, a
    /// crafted backup, a pool row) would otherwise stay the newest, and fresh, until that date.
    public static let futureToleranceSeconds: Double = 300

    /// Each account's newest `codex` reading at `now` (Unix seconds): whole rows of
    /// `usage_samples`, one an account. A reading whose time is not a number, is before 1970, or is
    /// dated beyond ``futureToleranceSeconds`` ahead is left out; one dated ahead within the
    /// tolerance counts only when the account has none up to now: a reading planted a few minutes
    /// ahead never hides the polls that come after it. Of readings at the same time, the one
    /// stored last.
    public static func sql(now: Double) -> String {
        let present = now.isFinite ? now : 0
        return """
            SELECT s.* FROM usage_samples s WHERE s.id IN (
              SELECT id FROM (
                SELECT id, row_number() OVER (PARTITION BY account_id ORDER BY observed_at <= \(present) DESC, observed_at DESC, id DESC) AS rank
                FROM usage_samples
                WHERE limit_id = 'codex' AND typeof(observed_at) IN ('real', 'integer') AND observed_at >= 0
                  AND observed_at <= \(present + futureToleranceSeconds))
              WHERE rank = 1)
            """
    }
}

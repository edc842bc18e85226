-- Leases (`chappie lease`): a holder uses an account for a while, and no more than max_leases
-- holders use one account at once. A lease that hands out a Codex home takes every slot. Expired
-- leases (their holder stopped renewing) are deleted by the next acquisition, which takes the slot.
-- Times are unix seconds.
ALTER TABLE accounts ADD COLUMN max_leases INTEGER NOT NULL DEFAULT 1 CHECK (max_leases >= 1);
CREATE TABLE leases (
    id            TEXT    PRIMARY KEY CHECK (length(id) = 36),
    account_id    INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    machine       TEXT    NOT NULL,
    holder        TEXT    NOT NULL,
    whole_account INTEGER NOT NULL CHECK (whole_account IN (0, 1)),
    acquired_at   REAL    NOT NULL,
    expires_at    REAL    NOT NULL
);
CREATE INDEX leases_by_account ON leases (account_id);

-- Leases (`chappie lease`): a holder uses an account for a while, and no more than max_leases
-- holders use one account at once, fleet-wide. A lease that hands out a Codex home takes every
-- slot. Times are the server's (now()), so machines' clocks need not agree. Expired leases (their
-- holder stopped renewing) are deleted by the next acquisition, which takes the slot over.
ALTER TABLE accounts ADD COLUMN max_leases INTEGER NOT NULL DEFAULT 1 CHECK (max_leases >= 1);
CREATE TABLE leases (
    id            UUID        PRIMARY KEY,
    account_id    BIGINT      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    machine       TEXT        NOT NULL,
    holder        TEXT        NOT NULL,
    whole_account BOOLEAN     NOT NULL,
    acquired_at   TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX leases_by_account ON leases (account_id);

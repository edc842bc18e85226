-- Accounts `chappie pool migrate` has begun to move into the team pool. The mark is committed
-- before the account is written to the pool and goes with the account when the move ends (the
-- local row is deleted). While it is there, no command reads the account's tokens from this store:
-- a move killed half-way leaves at most one usable copy, never one here and one in the pool, whose
-- use on both sides would get the rotating refresh token revoked. Running the move again finishes it.
CREATE TABLE pool_moves (
    account_id INTEGER PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    started_at TEXT    NOT NULL
);

-- Tokens each account used per UTC day, as the service's `wham/profiles/me` counts them
-- (`daily_usage_buckets`); a day's newest count replaces the one before. `token_history_reads`
-- says when each account's history was last read (Unix seconds), so that it is read at most hourly.
CREATE TABLE daily_tokens (
    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    day        TEXT    NOT NULL,
    tokens     INTEGER NOT NULL CHECK (tokens >= 0),
    PRIMARY KEY (account_id, day)
);
CREATE TABLE token_history_reads (
    account_id INTEGER PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    read_at    REAL    NOT NULL
);

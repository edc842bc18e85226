-- chappie's schema, version 1. The files in migrations/ are the one source of truth: they are
-- embedded into the binaries (Sources/ChappieStoreFormat/EmbeddedMigrations.swift, made by
-- `make migrations`) and applied in order by GRDB's migrator, each in its own transaction.
-- Timestamps are GRDB's text dates (UTC, "YYYY-MM-DD HH:MM:SS.SSS").

-- One row per account slot. The name is what the user types.
CREATE TABLE accounts (
    id                 INTEGER PRIMARY KEY,
    name               TEXT    NOT NULL UNIQUE
                       CHECK (length(name) BETWEEN 1 AND 64
                              AND name NOT GLOB '*[^A-Za-z0-9._-]*'
                              AND name NOT IN ('.', '..')),
    email              TEXT,
    chatgpt_account_id TEXT,
    chatgpt_user_id    TEXT,
    plan               TEXT,
    is_fedramp         INTEGER NOT NULL DEFAULT 0 CHECK (is_fedramp IN (0, 1)),
    status             TEXT    NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'reauth_required', 'disabled')),
    access_expires_at  TEXT,
    last_refresh_at    TEXT,
    last_error         TEXT,   -- a message for people; never a secret
    codex_home         TEXT,   -- the Codex home this account was last exported to
    created_at         TEXT    NOT NULL,
    updated_at         TEXT    NOT NULL
);
-- Signing in or importing the same ChatGPT account and user again updates that row.
CREATE UNIQUE INDEX accounts_by_chatgpt_identity ON accounts (chatgpt_account_id, chatgpt_user_id)
    WHERE chatgpt_account_id IS NOT NULL AND chatgpt_user_id IS NOT NULL;

-- One sealed blob per account: {"id_token","access_token","refresh_token"} sealed with
-- XChaCha20-Poly1305 under the key named by key_id, with associated data naming the account row
-- and the key, so a blob copied to another row does not open.
CREATE TABLE credentials (
    account_id INTEGER PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    key_id     TEXT NOT NULL CHECK (length(key_id) = 16),
    nonce      BLOB NOT NULL CHECK (length(nonce) = 24),
    ciphertext BLOB NOT NULL CHECK (length(ciphertext) >= 16),
    updated_at TEXT NOT NULL
);

-- The history of every account's usage-limit windows. Windows are stored by length, not by the
-- slot the service used: five_hour_* is the window shorter than a day (5 hours), weekly_* the
-- longer one (7 days). Times are unix seconds (REAL/INTEGER) so reports can group millions of rows.
CREATE TABLE usage_samples (
    id                       INTEGER PRIMARY KEY,
    account_id               INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    observed_at              REAL    NOT NULL,
    source                   TEXT    NOT NULL CHECK (source IN ('poll', 'headers', 'stream', 'limit_error')),
    limit_id                 TEXT    NOT NULL DEFAULT 'codex',
    plan                     TEXT,
    five_hour_used_percent   REAL CHECK (five_hour_used_percent IS NULL OR five_hour_used_percent >= 0),
    five_hour_window_minutes INTEGER,
    five_hour_resets_at      INTEGER,
    weekly_used_percent      REAL CHECK (weekly_used_percent IS NULL OR weekly_used_percent >= 0),
    weekly_window_minutes    INTEGER,
    weekly_resets_at         INTEGER,
    credits_has_credits      INTEGER CHECK (credits_has_credits IN (0, 1)),
    credits_unlimited        INTEGER CHECK (credits_unlimited IN (0, 1)),
    credits_balance          TEXT,
    limit_reached            INTEGER NOT NULL DEFAULT 0 CHECK (limit_reached IN (0, 1))
);
CREATE INDEX usage_samples_by_account_time ON usage_samples (account_id, observed_at);

-- The audit log. account_name is copied so entries outlive a removed account. detail never holds
-- a token, key or passphrase.
CREATE TABLE events (
    id           INTEGER PRIMARY KEY,
    at           TEXT    NOT NULL,
    kind         TEXT    NOT NULL,
    account_id   INTEGER REFERENCES accounts (id) ON DELETE SET NULL,
    account_name TEXT,
    detail       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX events_by_time ON events (at);

-- Settings: the active account, the key check (a sealed known value that proves the key before any
-- write), the key id, the passphrase KDF parameters, the default Codex home.
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;

-- The team pool's schema (PostgreSQL 13 or later), version 1: the SQLite store's tables as they
-- stand after migrations/0004, with what several machines sharing one pool need besides. Embedded
-- into the binary with the SQLite files (`make migrations`); the missing ones are applied in order in
-- one transaction, under an advisory lock, so that two machines starting at once do not both migrate.
-- Times are timestamptz, except usage readings' (unix seconds, as on SQLite, for reports).
-- Each statement ends with a semicolon at the end of a line: chappie runs them one at a time.

-- One row per account. `uuid` is the identity sealed credentials are bound to, the same as in the
-- SQLite store they may have come from (`chappie pool migrate --from-sqlite`).
CREATE TABLE accounts (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    uuid               UUID   NOT NULL UNIQUE,
    name               TEXT   NOT NULL UNIQUE
                       CHECK (length(name) BETWEEN 1 AND 64 AND name !~ '[^A-Za-z0-9._-]' AND name NOT IN ('.', '..')),
    email              TEXT,
    chatgpt_account_id TEXT,
    chatgpt_user_id    TEXT,
    plan               TEXT,
    is_fedramp         BOOLEAN NOT NULL DEFAULT false,
    status             TEXT    NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'reauth_required', 'disabled')),
    access_expires_at  TIMESTAMPTZ,
    last_refresh_at    TIMESTAMPTZ,
    last_error         TEXT,   -- a message for people, never a secret
    -- The one Codex home, fleet-wide, whose auth.json holds this account's tokens: a path on one
    -- machine. The Codex CLI refreshes without chappie's lock, so an account is never in two homes.
    codex_home_machine TEXT,
    codex_home         TEXT,
    reserve_percent    DOUBLE PRECISION CHECK (reserve_percent IS NULL OR (reserve_percent > 0 AND reserve_percent <= 100)),
    created_at         TIMESTAMPTZ NOT NULL,
    updated_at         TIMESTAMPTZ NOT NULL,
    CHECK ((codex_home IS NULL) = (codex_home_machine IS NULL))
);
CREATE UNIQUE INDEX accounts_by_chatgpt_identity ON accounts (chatgpt_account_id, chatgpt_user_id)
    WHERE chatgpt_account_id IS NOT NULL AND chatgpt_user_id IS NOT NULL;
CREATE UNIQUE INDEX accounts_codex_home_owner ON accounts (codex_home_machine, codex_home) WHERE codex_home IS NOT NULL;

-- One sealed blob per account, as on SQLite: XChaCha20-Poly1305 under the key `key_id` names, with
-- associated data naming the account's UUID and the key (binding 2). The database never sees a token.
CREATE TABLE sealed_credentials (
    account_id BIGINT      PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    key_id     TEXT        NOT NULL CHECK (length(key_id) = 16),
    nonce      BYTEA       NOT NULL CHECK (octet_length(nonce) = 24),
    ciphertext BYTEA       NOT NULL CHECK (octet_length(ciphertext) >= 16),
    updated_at TIMESTAMPTZ NOT NULL,
    binding    SMALLINT    NOT NULL DEFAULT 2 CHECK (binding = 2)
);

-- The usage history of every account, from every machine (`machine` is who polled).
CREATE TABLE usage_samples (
    id                       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id               BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    machine                  TEXT   NOT NULL,
    observed_at              DOUBLE PRECISION NOT NULL,
    source                   TEXT   NOT NULL CHECK (source IN ('poll', 'headers', 'stream', 'limit_error')),
    limit_id                 TEXT   NOT NULL DEFAULT 'codex',
    plan                     TEXT,
    five_hour_used_percent   DOUBLE PRECISION CHECK (five_hour_used_percent IS NULL OR five_hour_used_percent >= 0),
    five_hour_window_minutes INTEGER,
    five_hour_resets_at      BIGINT,
    weekly_used_percent      DOUBLE PRECISION CHECK (weekly_used_percent IS NULL OR weekly_used_percent >= 0),
    weekly_window_minutes    INTEGER,
    weekly_resets_at         BIGINT,
    credits_has_credits      BOOLEAN,
    credits_unlimited        BOOLEAN,
    credits_balance          TEXT,
    limit_reached            BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX usage_samples_by_account_time ON usage_samples (account_id, observed_at);

-- The audit log of the whole pool; `machine` says where each change was made.
CREATE TABLE events (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           TIMESTAMPTZ NOT NULL,
    kind         TEXT        NOT NULL,
    account_id   BIGINT REFERENCES accounts (id) ON DELETE SET NULL,
    account_name TEXT,
    machine      TEXT        NOT NULL,
    detail       TEXT        NOT NULL DEFAULT ''
);
CREATE INDEX events_by_time ON events (at);

-- Settings of the pool: the key check and key id, the usage retention.
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value BYTEA NOT NULL
);

-- Settings of one machine: its active account, its default Codex home.
CREATE TABLE machine_settings (
    machine TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   BYTEA NOT NULL,
    PRIMARY KEY (machine, key)
);

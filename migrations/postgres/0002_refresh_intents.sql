-- A refresh in progress, fleet-wide: written (and committed) before a machine redeems an account's
-- refresh token, removed in the transaction that stores the new tokens. When that machine cannot
-- store them (the database went away), it keeps them in a recovery file of its own and the row
-- stays: no other machine redeems the old token, which the issuer would take for reuse and revoke
-- with the new ones, until that machine has stored them. Signing the account in again clears it.
-- `instance` is the data directory's own id (its pool-instance file): two data directories on one
-- host share a machine name, but not their recovery files.
CREATE TABLE refresh_intents (
    account_id BIGINT      PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    machine    TEXT        NOT NULL,
    instance   UUID        NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One poller per account, fleet-wide: a daemon claims an account's usage poll for most of its
-- interval before polling, and the daemons of other machines leave that account alone until the
-- claim runs out. A daemon that dies simply stops claiming; another takes over at the next round.
CREATE TABLE poll_claims (
    account_id BIGINT      PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    machine    TEXT        NOT NULL,
    until      TIMESTAMPTZ NOT NULL
);

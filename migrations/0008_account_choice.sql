-- Which accounts chappie may choose by itself, and in what order (`chappie accounts set NAME
-- --auto off --priority N`): an account with auto_switch 0 is left out of auto-switch, --best,
-- failover and leases that name no account; among the others, a higher priority comes first.
ALTER TABLE accounts ADD COLUMN auto_switch INTEGER NOT NULL DEFAULT 1 CHECK (auto_switch IN (0, 1));
ALTER TABLE accounts ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;

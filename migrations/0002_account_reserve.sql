-- A per-account reserve: `chappie accounts set NAME --reserve 80` makes --best and auto-switch treat
-- the account as full once its binding window reaches 80 %. NULL means 100 %.
ALTER TABLE accounts ADD COLUMN reserve_percent REAL
    CHECK (reserve_percent IS NULL OR (reserve_percent > 0 AND reserve_percent <= 100));

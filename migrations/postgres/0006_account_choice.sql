-- As the local store's 0008: which accounts chappie may choose by itself, and in what order.
ALTER TABLE accounts ADD COLUMN auto_switch BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE accounts ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;

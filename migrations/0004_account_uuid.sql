-- A stable identity per account: a random UUID (lower-case text, RFC 4122 version 4) that never
-- changes, on every store backend. Sealed credentials are bound to it instead of the SQLite row id,
-- so a blob moves between stores (the team pool) unchanged and still cannot be moved to another
-- account.
ALTER TABLE accounts ADD COLUMN uuid TEXT CHECK (uuid IS NULL OR length(uuid) = 36);
UPDATE accounts SET uuid =
    lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-'
    || substr('89ab', 1 + abs(random() % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)));
CREATE UNIQUE INDEX accounts_by_uuid ON accounts (uuid);
-- Every account has one (ALTER TABLE cannot add a NOT NULL column without a constant default).
CREATE TRIGGER accounts_uuid_required_on_insert BEFORE INSERT ON accounts WHEN NEW.uuid IS NULL
BEGIN SELECT RAISE(ABORT, 'accounts.uuid is required'); END;
CREATE TRIGGER accounts_uuid_is_stable BEFORE UPDATE OF uuid ON accounts WHEN NEW.uuid IS NOT OLD.uuid
BEGIN SELECT RAISE(ABORT, 'accounts.uuid never changes'); END;

-- Credentials move to a table of a new name: a chappie of an earlier version still running (a daemon
-- started before the upgrade) then fails to write them instead of writing a blob the new binding
-- cannot open; its refresher keeps what it redeemed in a recovery file, which this version adopts.
ALTER TABLE credentials RENAME TO sealed_credentials;

-- What a sealed credential's associated data names: 1, the account's row id
-- ("chappie/credential/v1 account=<row id> key=<key id>"); 2, its UUID
-- ("chappie/credential/v2 account=<uuid> key=<key id>"). Rows sealed before this migration are 1;
-- the first open with the key reseals them all as 2 in one transaction (a SQL migration cannot: it
-- has no key) and removes the setting below. Until then, and only then, binding 1 is accepted.
ALTER TABLE sealed_credentials ADD COLUMN binding INTEGER NOT NULL DEFAULT 1 CHECK (binding IN (1, 2));
INSERT INTO settings (key, value) SELECT 'row_bound_credentials', X'31' WHERE EXISTS (SELECT 1 FROM sealed_credentials);

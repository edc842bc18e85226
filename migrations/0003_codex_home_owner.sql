-- One owner per Codex home: at most one account's tokens are kept in a given Codex home's
-- auth.json. Earlier versions left the home on every account ever switched there, and a refresh of
-- any of them rewrote the file. Where several accounts name one home, the active account keeps it
-- (else the one changed last); the others no longer own it.
UPDATE accounts SET codex_home = NULL
WHERE codex_home IS NOT NULL
  AND id <> (
      SELECT owner.id FROM accounts AS owner
      WHERE owner.codex_home = accounts.codex_home
      ORDER BY (CAST(owner.id AS TEXT) = (SELECT CAST(value AS TEXT) FROM settings WHERE key = 'active_account')) DESC,
               owner.updated_at DESC, owner.id DESC
      LIMIT 1);
CREATE UNIQUE INDEX accounts_codex_home_owner ON accounts (codex_home) WHERE codex_home IS NOT NULL;

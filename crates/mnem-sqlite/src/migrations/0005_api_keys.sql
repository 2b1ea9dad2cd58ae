-- API keys for `mnem serve`. The secret is never stored: `secret_hash` is an Argon2id PHC
-- string. The public prefix is the primary key, not (team_id, ...): a request presents
-- only its token, and the team is what the lookup finds.
CREATE TABLE api_keys (
    key_prefix  TEXT PRIMARY KEY,
    team_id     BLOB NOT NULL,
    profile_id  BLOB NOT NULL,
    access      TEXT NOT NULL CHECK (access IN ('read', 'write')),
    secret_hash TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    revoked_at  INTEGER,
    FOREIGN KEY (team_id, profile_id) REFERENCES profiles (team_id, profile_id)
) STRICT;

CREATE INDEX api_keys_by_team ON api_keys (team_id, created_at);

-- What a key grants never changes; only revocation is written, once.
CREATE TRIGGER api_keys_grant_is_immutable
BEFORE UPDATE OF key_prefix, team_id, profile_id, access, secret_hash, created_at, expires_at
ON api_keys
BEGIN
    SELECT RAISE(ABORT, 'an API key''s grant is immutable; revoke it and create another');
END;

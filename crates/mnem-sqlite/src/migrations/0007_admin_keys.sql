-- Keys may carry the `admin` scope (retract or quarantine another profile's evidence).
-- SQLite cannot change a CHECK constraint in place: the table is rebuilt, rows kept.
DROP TRIGGER api_keys_grant_is_immutable;

CREATE TABLE api_keys_admin (
    key_prefix  TEXT PRIMARY KEY,
    team_id     BLOB NOT NULL,
    profile_id  BLOB NOT NULL,
    access      TEXT NOT NULL CHECK (access IN ('read', 'write', 'admin')),
    secret_hash TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    revoked_at  INTEGER,
    FOREIGN KEY (team_id, profile_id) REFERENCES profiles (team_id, profile_id)
) STRICT;

INSERT INTO api_keys_admin
    (key_prefix, team_id, profile_id, access, secret_hash, created_at, expires_at, revoked_at)
SELECT key_prefix, team_id, profile_id, access, secret_hash, created_at, expires_at, revoked_at
FROM api_keys;

DROP TABLE api_keys;
ALTER TABLE api_keys_admin RENAME TO api_keys;

CREATE INDEX api_keys_by_team ON api_keys (team_id, created_at);

-- What a key grants never changes; only revocation is written, once.
CREATE TRIGGER api_keys_grant_is_immutable
BEFORE UPDATE OF key_prefix, team_id, profile_id, access, secret_hash, created_at, expires_at
ON api_keys
BEGIN
    SELECT RAISE(ABORT, 'an API key''s grant is immutable; revoke it and create another');
END;

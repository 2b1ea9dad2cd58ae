-- Derived search state: one row per evidence document, never authoritative. The vector
-- is little-endian f32; `contract` names the embedding contract it was made under, and
-- the vector branch reads only rows whose contract is the active one.

CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE search_documents (
    doc         INTEGER PRIMARY KEY REFERENCES evidence (doc),
    team_id     BLOB NOT NULL,
    state       TEXT NOT NULL,  -- pending | current | failed
    contract    TEXT,
    vector      BLOB,
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT,
    enqueued_at INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;

CREATE INDEX search_documents_by_state ON search_documents (state, enqueued_at);
CREATE INDEX search_documents_by_team ON search_documents (team_id, state, contract);

-- Evidence written before this migration is queued for embedding.
INSERT INTO search_documents (doc, team_id, state, enqueued_at, updated_at)
SELECT doc, team_id, 'pending', recorded_at, recorded_at FROM evidence;

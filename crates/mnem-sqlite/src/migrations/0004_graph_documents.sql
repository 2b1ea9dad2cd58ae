-- Derived search documents for discovery: one per entity (its names and kind) and one
-- per relationship (endpoint names, predicate surface, polarity), embedded by the same
-- worker under the same contract as evidence. Never authoritative, never evidence: they
-- only choose where discovery starts, and relationship eligibility is always re-read
-- from `relationships`. They hold no evidence text.
CREATE TABLE graph_documents (
    doc         INTEGER PRIMARY KEY,
    team_id     BLOB NOT NULL,
    target_kind TEXT NOT NULL,  -- entity | relationship
    target_id   BLOB NOT NULL,
    text        TEXT NOT NULL,
    state       TEXT NOT NULL,  -- pending | current | failed
    contract    TEXT,
    vector      BLOB,
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT,
    enqueued_at INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (team_id, target_kind, target_id)
) STRICT;

CREATE INDEX graph_documents_by_state ON graph_documents (state, enqueued_at);
CREATE INDEX graph_documents_by_team ON graph_documents (team_id, state, contract);

-- The HNSW catch-up reads rows changed since its watermark; without these it walks every
-- row of the team, vectors included, on every query.
CREATE INDEX graph_documents_changed ON graph_documents (team_id, contract, state, updated_at);
CREATE INDEX search_documents_changed ON search_documents (team_id, contract, state, updated_at);

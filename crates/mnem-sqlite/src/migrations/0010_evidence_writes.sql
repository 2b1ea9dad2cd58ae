-- Content-hash de-duplication: a write that repeats a stored text is recorded beside the
-- stored item instead of becoming a second one. Writes are numbered per item from 0
-- (0 = the item's own first write, copied from its row when the second arrives); an item
-- written once has no rows here. `state` is 'current' or 'retracted' (by its writer).
CREATE TABLE evidence_writes (
    team_id          BLOB NOT NULL,
    evidence_id      BLOB NOT NULL,
    number           INTEGER NOT NULL,
    owner_profile_id BLOB NOT NULL,
    source_type      TEXT NOT NULL,
    source           TEXT NOT NULL,
    authority        TEXT NOT NULL,
    source_group     TEXT NOT NULL,
    source_key       TEXT,
    source_revision  INTEGER,
    observed_at      INTEGER NOT NULL,
    recorded_at      INTEGER NOT NULL,
    state            TEXT NOT NULL,
    PRIMARY KEY (team_id, evidence_id, number)
) WITHOUT ROWID;

-- A write finds the stored items with its text by hash; only current ones can absorb it.
CREATE INDEX evidence_by_hash ON evidence (team_id, content_hash) WHERE state = 'current';

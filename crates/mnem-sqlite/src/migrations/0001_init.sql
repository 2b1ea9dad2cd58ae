-- Every row carries team_id and every query filters on it. Stamps are INTEGER
-- microseconds since the Unix epoch: fixed-width values that compare correctly.

CREATE TABLE teams (
    team_id    BLOB PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE profiles (
    team_id    BLOB NOT NULL REFERENCES teams (team_id),
    profile_id BLOB NOT NULL,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (team_id, profile_id),
    UNIQUE (team_id, name)
) STRICT;

-- Metadata only: recall filters and sorts thousands of these rows per query, so they stay
-- narrow (many per page). The text lives in evidence_content under the same `doc`.
CREATE TABLE evidence (
    doc              INTEGER PRIMARY KEY,
    team_id          BLOB NOT NULL REFERENCES teams (team_id),
    evidence_id      BLOB NOT NULL,
    owner_profile_id BLOB NOT NULL,
    kind             TEXT NOT NULL,
    source_type      TEXT NOT NULL,
    source           TEXT NOT NULL,
    authority        TEXT NOT NULL,
    source_group     TEXT NOT NULL,
    source_key       TEXT,
    source_revision  INTEGER,
    labels           TEXT NOT NULL,  -- JSON array, sorted
    refs             TEXT NOT NULL,  -- JSON array of {kind, id}, canonical
    scope            TEXT NOT NULL,  -- path text, '' = team-wide
    scope_depth      INTEGER NOT NULL,
    space            TEXT NOT NULL,
    observed_at      INTEGER NOT NULL,
    recorded_at      INTEGER NOT NULL,
    expires_at       INTEGER,
    content_hash     TEXT NOT NULL,
    state            TEXT NOT NULL,  -- current lifecycle state; the log below is the history
    UNIQUE (team_id, evidence_id),
    FOREIGN KEY (team_id, owner_profile_id) REFERENCES profiles (team_id, profile_id)
) STRICT;

-- Cold text, read only to hydrate selected results; also the FTS5 external content.
CREATE TABLE evidence_content (
    doc     INTEGER PRIMARY KEY REFERENCES evidence (doc),
    team_id BLOB NOT NULL,
    content TEXT NOT NULL
) STRICT;

CREATE INDEX evidence_listing ON evidence (team_id, state, observed_at DESC, evidence_id);
CREATE INDEX evidence_content_hash ON evidence (team_id, content_hash);

CREATE TABLE evidence_refs (
    team_id     BLOB NOT NULL,
    ref_kind    TEXT NOT NULL,
    ref_id      TEXT NOT NULL,
    evidence_id BLOB NOT NULL,
    PRIMARY KEY (team_id, ref_kind, ref_id, evidence_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE evidence_events (
    team_id          BLOB NOT NULL,
    evidence_id      BLOB NOT NULL,
    seq              INTEGER NOT NULL,
    state            TEXT NOT NULL,
    actor_profile_id BLOB NOT NULL,
    at               INTEGER NOT NULL,
    reason           TEXT,
    PRIMARY KEY (team_id, evidence_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER evidence_events_no_update BEFORE UPDATE ON evidence_events
BEGIN
    SELECT RAISE(ABORT, 'evidence_events is append-only');
END;

CREATE TRIGGER evidence_events_no_delete BEFORE DELETE ON evidence_events
BEGIN
    SELECT RAISE(ABORT, 'evidence_events is append-only');
END;

CREATE VIRTUAL TABLE evidence_fts USING fts5 (
    content,
    content = 'evidence_content',
    content_rowid = 'doc',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

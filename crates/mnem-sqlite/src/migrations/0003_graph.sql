-- The semantic layer. Entities and relationships are team-scoped like everything else
-- (team_id leads every key). A relationship's content never changes after the write;
-- its tier, status and version change only together with an appended transition, and
-- verification events and transitions are append-only. The only way a log row can go
-- is erasure (`forget`), which first records a content-free tombstone.

CREATE TABLE entities (
    team_id    BLOB NOT NULL REFERENCES teams (team_id),
    entity_id  BLOB NOT NULL,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (team_id, entity_id)
) STRICT, WITHOUT ROWID;

-- Every normalised name an entity answers to, its own name included.
CREATE TABLE entity_aliases (
    team_id   BLOB NOT NULL,
    alias_key TEXT NOT NULL,
    entity_id BLOB NOT NULL,
    alias     TEXT NOT NULL,
    PRIMARY KEY (team_id, alias_key, entity_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE predicates (
    team_id       BLOB NOT NULL,
    predicate     TEXT NOT NULL,
    single_valued INTEGER NOT NULL,
    declared_at   INTEGER NOT NULL,
    PRIMARY KEY (team_id, predicate)
) STRICT, WITHOUT ROWID;

CREATE TABLE relationships (
    team_id            BLOB NOT NULL,
    relationship_id    BLOB NOT NULL,
    owner_profile_id   BLOB NOT NULL,
    subject_entity_id  BLOB NOT NULL,
    predicate          TEXT NOT NULL,
    predicate_surface  TEXT NOT NULL,
    object_entity_id   BLOB,           -- an entity object, or
    object_value       TEXT,           -- a typed value (JSON {type, value})
    object_key         TEXT NOT NULL,  -- what conflicts compare
    polarity           TEXT NOT NULL,
    valid_from         INTEGER,
    valid_to           INTEGER,
    recorded_at        INTEGER NOT NULL,
    recorded_to        INTEGER,
    semantic_group_key TEXT NOT NULL,
    supersedes         BLOB,
    verdict            TEXT NOT NULL,
    tier               TEXT NOT NULL,
    status             TEXT NOT NULL,
    version            INTEGER NOT NULL,
    PRIMARY KEY (team_id, relationship_id),
    CHECK ((object_entity_id IS NULL) <> (object_value IS NULL))
) STRICT, WITHOUT ROWID;

-- Adjacency reads the newest eligible edges of an entity and stops after the fan-out:
-- status leads recorded_at so that range is contiguous (a hub is never fully sorted).
CREATE INDEX relationships_by_subject
    ON relationships (team_id, subject_entity_id, status, recorded_at DESC);
CREATE INDEX relationships_by_object
    ON relationships (team_id, object_entity_id, status, recorded_at DESC)
    WHERE object_entity_id IS NOT NULL;
-- Single-valued conflicts compare claims on one subject and predicate.
CREATE INDEX relationships_by_claim
    ON relationships (team_id, subject_entity_id, predicate);
CREATE INDEX relationships_by_predecessor
    ON relationships (team_id, supersedes) WHERE supersedes IS NOT NULL;

CREATE TABLE relationship_supports (
    team_id         BLOB NOT NULL,
    relationship_id BLOB NOT NULL,
    evidence_id     BLOB NOT NULL,
    span_start      INTEGER NOT NULL,
    span_end        INTEGER NOT NULL,
    quote           TEXT,  -- NULL once the evidence is erased
    PRIMARY KEY (team_id, relationship_id, evidence_id, span_start, span_end)
) STRICT, WITHOUT ROWID;

CREATE INDEX supports_by_evidence ON relationship_supports (team_id, evidence_id);

CREATE TABLE relationship_erasures (
    team_id         BLOB NOT NULL,
    relationship_id BLOB NOT NULL,
    erased_at       INTEGER NOT NULL,
    PRIMARY KEY (team_id, relationship_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE verification_events (
    team_id         BLOB NOT NULL,
    relationship_id BLOB NOT NULL,
    seq             INTEGER NOT NULL,
    verdict         TEXT NOT NULL,
    confidence      REAL NOT NULL,
    verifier        TEXT NOT NULL,
    rationale       TEXT NOT NULL,
    at              INTEGER NOT NULL,
    PRIMARY KEY (team_id, relationship_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE relationship_transitions (
    team_id          BLOB NOT NULL,
    relationship_id  BLOB NOT NULL,
    seq              INTEGER NOT NULL,
    from_tier        TEXT,
    to_tier          TEXT NOT NULL,
    from_status      TEXT,
    to_status        TEXT NOT NULL,
    reason           TEXT NOT NULL,
    actor_profile_id BLOB NOT NULL,
    at               INTEGER NOT NULL,
    PRIMARY KEY (team_id, relationship_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER verification_events_no_update BEFORE UPDATE ON verification_events
BEGIN
    SELECT RAISE(ABORT, 'verification_events is append-only');
END;

CREATE TRIGGER verification_events_no_delete BEFORE DELETE ON verification_events
WHEN NOT EXISTS (SELECT 1 FROM relationship_erasures x
                 WHERE x.team_id = OLD.team_id AND x.relationship_id = OLD.relationship_id)
BEGIN
    SELECT RAISE(ABORT, 'verification_events is append-only');
END;

CREATE TRIGGER relationship_transitions_no_update BEFORE UPDATE ON relationship_transitions
BEGIN
    SELECT RAISE(ABORT, 'relationship_transitions is append-only');
END;

CREATE TRIGGER relationship_transitions_no_delete BEFORE DELETE ON relationship_transitions
WHEN NOT EXISTS (SELECT 1 FROM relationship_erasures x
                 WHERE x.team_id = OLD.team_id AND x.relationship_id = OLD.relationship_id)
BEGIN
    SELECT RAISE(ABORT, 'relationship_transitions is append-only');
END;

-- A relationship's content is immutable: only its standing columns may change.
CREATE TRIGGER relationships_content_immutable BEFORE UPDATE OF
    owner_profile_id, subject_entity_id, predicate, predicate_surface, object_entity_id,
    object_value, object_key, polarity, valid_from, valid_to, recorded_at,
    semantic_group_key, supersedes, verdict ON relationships
BEGIN
    SELECT RAISE(ABORT, 'a relationship''s content is immutable; correct it instead');
END;

CREATE TABLE idempotency (
    team_id      BLOB NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    outcome      TEXT NOT NULL,  -- JSON RememberOutcome
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (team_id, key)
) STRICT, WITHOUT ROWID;

-- Source revisions are looked up by handle to supersede older fragments.
CREATE INDEX evidence_by_source_key ON evidence (team_id, source_key, source_revision)
    WHERE source_key IS NOT NULL;

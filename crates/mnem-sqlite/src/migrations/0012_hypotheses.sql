-- Dreaming's hypotheses: each derived from exactly two relationships, kept apart from
-- evidence and relationships (never a recall result, never a tier). A dream pass adds
-- each (first source, second source, rule) once; only status and resolution change.
CREATE TABLE hypotheses (
    team_id                BLOB NOT NULL,
    hypothesis_id          BLOB NOT NULL,
    first_relationship_id  BLOB NOT NULL,
    first_version          INTEGER NOT NULL,
    second_relationship_id BLOB NOT NULL,
    second_version         INTEGER NOT NULL,
    subject_entity_id      BLOB NOT NULL,
    object_entity_id       BLOB NOT NULL,
    rule                   TEXT NOT NULL,
    statement              TEXT NOT NULL,
    status                 TEXT NOT NULL,
    created_at             INTEGER NOT NULL,
    resolution             TEXT,
    resolved_at            INTEGER,
    confirmed_by           TEXT NOT NULL,  -- JSON array of relationship ids
    PRIMARY KEY (team_id, hypothesis_id),
    UNIQUE (team_id, first_relationship_id, second_relationship_id, rule)
) STRICT;

-- Recall looks hypotheses up by either source.
CREATE INDEX hypotheses_by_second_source ON hypotheses (team_id, second_relationship_id);

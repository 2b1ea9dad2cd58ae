-- Dreaming's hypotheses: each derived from exactly two relationships, kept apart from
-- evidence and relationships (never a recall result, never a tier). A dream pass adds
-- each (first source, second source, rule) once; only status and resolution change.
CREATE TABLE hypotheses (
    team_id                uuid NOT NULL REFERENCES teams (team_id),
    hypothesis_id          uuid NOT NULL,
    first_relationship_id  uuid NOT NULL,
    first_version          bigint NOT NULL,
    second_relationship_id uuid NOT NULL,
    second_version         bigint NOT NULL,
    subject_entity_id      uuid NOT NULL,
    object_entity_id       uuid NOT NULL,
    rule                   text NOT NULL,
    statement              text NOT NULL,
    status                 text NOT NULL,
    created_at             bigint NOT NULL,
    resolution             text,
    resolved_at            bigint,
    confirmed_by           text NOT NULL,  -- JSON array of relationship ids
    PRIMARY KEY (team_id, hypothesis_id),
    UNIQUE (team_id, first_relationship_id, second_relationship_id, rule)
);

-- Recall looks hypotheses up by either source.
CREATE INDEX hypotheses_by_second_source ON hypotheses (team_id, second_relationship_id);

ALTER TABLE hypotheses ENABLE ROW LEVEL SECURITY;
ALTER TABLE hypotheses FORCE ROW LEVEL SECURITY;
CREATE POLICY team_isolation ON hypotheses USING (team_id = mnem_team())
    WITH CHECK (team_id = mnem_team());
GRANT SELECT, INSERT, UPDATE, DELETE ON hypotheses TO mnem_app;

-- Communities: clusters of entities found over the team's eligible relationships, kept
-- apart from evidence and relationships (a recall shows their summaries only in slots
-- its results left unused). Each computation that changes them is a new version in
-- community_runs; communities and community_members hold the latest version only.
CREATE TABLE community_runs (
    team_id       uuid NOT NULL REFERENCES teams (team_id),
    version       bigint NOT NULL,
    algorithm     text NOT NULL,
    fingerprint   text NOT NULL,
    relationships bigint NOT NULL,
    communities   bigint NOT NULL,
    computed_at   bigint NOT NULL,
    PRIMARY KEY (team_id, version)
);

CREATE TABLE communities (
    team_id            uuid NOT NULL REFERENCES teams (team_id),
    community_id       uuid NOT NULL,
    version            bigint NOT NULL,
    ordinal            bigint NOT NULL,
    entity_count       bigint NOT NULL,
    relationship_count bigint NOT NULL,
    top_entities       text NOT NULL,  -- JSON array of {entity_id, name}
    top_predicates     text NOT NULL,  -- JSON array of {predicate, count}
    summary            text NOT NULL,
    PRIMARY KEY (team_id, community_id)
);

CREATE TABLE community_members (
    team_id      uuid NOT NULL REFERENCES teams (team_id),
    community_id uuid NOT NULL,
    entity_id    uuid NOT NULL,
    PRIMARY KEY (team_id, community_id, entity_id)
);

-- Recall looks communities up by the entities near its results.
CREATE INDEX community_members_by_entity ON community_members (team_id, entity_id);

ALTER TABLE community_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE community_runs FORCE ROW LEVEL SECURITY;
CREATE POLICY team_isolation ON community_runs USING (team_id = mnem_team())
    WITH CHECK (team_id = mnem_team());
ALTER TABLE communities ENABLE ROW LEVEL SECURITY;
ALTER TABLE communities FORCE ROW LEVEL SECURITY;
CREATE POLICY team_isolation ON communities USING (team_id = mnem_team())
    WITH CHECK (team_id = mnem_team());
ALTER TABLE community_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE community_members FORCE ROW LEVEL SECURITY;
CREATE POLICY team_isolation ON community_members USING (team_id = mnem_team())
    WITH CHECK (team_id = mnem_team());
GRANT SELECT, INSERT, UPDATE, DELETE ON community_runs, communities, community_members TO mnem_app;

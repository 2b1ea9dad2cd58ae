-- Communities: clusters of entities found over the team's eligible relationships, kept
-- apart from evidence and relationships (a recall shows their summaries only in slots
-- its results left unused). Each computation that changes them is a new version in
-- community_runs; communities and community_members hold the latest version only.
CREATE TABLE community_runs (
    team_id       BLOB NOT NULL,
    version       INTEGER NOT NULL,
    algorithm     TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    relationships INTEGER NOT NULL,
    communities   INTEGER NOT NULL,
    computed_at   INTEGER NOT NULL,
    PRIMARY KEY (team_id, version)
) STRICT;

CREATE TABLE communities (
    team_id            BLOB NOT NULL,
    community_id       BLOB NOT NULL,
    version            INTEGER NOT NULL,
    ordinal            INTEGER NOT NULL,
    entity_count       INTEGER NOT NULL,
    relationship_count INTEGER NOT NULL,
    top_entities       TEXT NOT NULL,  -- JSON array of {entity_id, name}
    top_predicates     TEXT NOT NULL,  -- JSON array of {predicate, count}
    summary            TEXT NOT NULL,
    PRIMARY KEY (team_id, community_id)
) STRICT;

CREATE TABLE community_members (
    team_id      BLOB NOT NULL,
    community_id BLOB NOT NULL,
    entity_id    BLOB NOT NULL,
    PRIMARY KEY (team_id, community_id, entity_id)
) STRICT;

-- Recall looks communities up by the entities near its results.
CREATE INDEX community_members_by_entity ON community_members (team_id, entity_id);

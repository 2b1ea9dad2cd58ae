-- Mentions (mnem_core::mention): the names and key phrases each stored text mentions, one
-- row per text and key, for recall's entity hop (mnem_core::hop), as on SQLite (its
-- migration 0017). Written in the evidence's transaction like the block posting lists,
-- removed with the text when it is erased; never evidence and never a relationship claim.
-- The migration's Rust step derives them for the texts stored before.
CREATE TABLE mentions (
    team_id    uuid NOT NULL,
    entity_key text NOT NULL,
    doc        bigint NOT NULL,
    PRIMARY KEY (team_id, entity_key, doc)
);

CREATE INDEX mentions_by_doc ON mentions (team_id, doc);

ALTER TABLE mentions ENABLE ROW LEVEL SECURITY;
ALTER TABLE mentions FORCE ROW LEVEL SECURITY;
CREATE POLICY team_isolation ON mentions USING (team_id = mnem_team())
    WITH CHECK (team_id = mnem_team());
GRANT SELECT, INSERT, DELETE ON mentions TO mnem_app;

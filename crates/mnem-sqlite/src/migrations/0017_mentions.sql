-- Mentions (mnem_core::mention): the names and key phrases each stored text mentions, one
-- row per text and key, for recall's entity hop (mnem_core::hop). Written in the
-- evidence's transaction like the full-text index, removed with the text when it is
-- erased; never evidence and never a relationship claim. The migration's Rust step
-- derives them for the texts stored before.
CREATE TABLE mentions (
    team_id    BLOB NOT NULL,
    entity_key TEXT NOT NULL,
    doc        INTEGER NOT NULL,
    PRIMARY KEY (team_id, entity_key, doc)
) WITHOUT ROWID;

CREATE INDEX mentions_by_doc ON mentions (doc);

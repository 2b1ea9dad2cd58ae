-- Content-hash de-duplication: a write that repeats a stored text is recorded beside the
-- stored item instead of becoming a second one. Writes are numbered per item from 0
-- (0 = the item's own first write, copied from its row when the second arrives); an item
-- written once has no rows here. `state` is 'current' or 'retracted' (by its writer).
CREATE TABLE evidence_writes (
    team_id          uuid NOT NULL REFERENCES teams (team_id),
    evidence_id      uuid NOT NULL,
    number           bigint NOT NULL,
    owner_profile_id uuid NOT NULL,
    source_type      text NOT NULL,
    source           text NOT NULL,
    authority        text NOT NULL,
    source_group     text NOT NULL,
    source_key       text,
    source_revision  bigint,
    observed_at      bigint NOT NULL,
    recorded_at      bigint NOT NULL,
    state            text NOT NULL,
    PRIMARY KEY (team_id, evidence_id, number),
    FOREIGN KEY (team_id, evidence_id) REFERENCES evidence (team_id, evidence_id)
);

ALTER TABLE evidence_writes ENABLE ROW LEVEL SECURITY;
ALTER TABLE evidence_writes FORCE ROW LEVEL SECURITY;
CREATE POLICY team_isolation ON evidence_writes USING (team_id = mnem_team())
    WITH CHECK (team_id = mnem_team());
GRANT SELECT, INSERT, UPDATE, DELETE ON evidence_writes TO mnem_app;

-- A write finds the stored items with its text by hash; only current ones can absorb it.
CREATE INDEX evidence_by_hash ON evidence (team_id, content_hash) WHERE state = 'current';

-- Items stored before hashed their exact text; the key is now the hash of the text with
-- white-space runs collapsed and the ends trimmed. Recomputed here for current items (the
-- only ones a write can repeat) with SQL's notion of white space; a text whose white
-- space SQL and mnem classify differently keeps a hash no new write produces, so it is
-- simply not matched.
ALTER TABLE evidence NO FORCE ROW LEVEL SECURITY;
ALTER TABLE evidence DISABLE ROW LEVEL SECURITY;
UPDATE evidence
SET content_hash = encode(sha256(convert_to(
        btrim(regexp_replace(content, '\s+', ' ', 'g')), 'UTF8')), 'hex')
WHERE state = 'current' AND content ~ '(^\s|\s$|\s\s|[\t\n\r\f\v])';
ALTER TABLE evidence ENABLE ROW LEVEL SECURITY;
ALTER TABLE evidence FORCE ROW LEVEL SECURITY;

-- Full text as block posting lists (mnem_core::lexical::blocks), as on SQLite (its
-- migration 0015), replacing the GIN index over a tsvector. The GIN index could only say
-- which rows hold a term: a query of common words scored every row holding any of them,
-- a sequential scan of the team at 1M texts (1.5 s). Blocks of 128 postings with a score
-- bound beside them let the core's top-k (mnem_core::lexical::topk) skip what cannot
-- reach the pool and ask about eligibility only for what can, the same algorithm on both
-- backends. The migration's Rust step builds the blocks from the stored texts.

-- A text's number in its team's posting lists: increasing as texts are written (a
-- sequence, so concurrent writers never share one; a number taken by a transaction that
-- commits later than a higher one lands inside a block, which the edit allows).
CREATE SEQUENCE evidence_doc;
ALTER TABLE evidence ADD COLUMN doc bigint;
ALTER TABLE evidence NO FORCE ROW LEVEL SECURITY;
ALTER TABLE evidence DISABLE ROW LEVEL SECURITY;
UPDATE evidence e SET doc = n.doc
FROM (SELECT team_id, evidence_id,
             nextval('evidence_doc') AS doc
      FROM (SELECT team_id, evidence_id FROM evidence ORDER BY recorded_at, evidence_id) o) n
WHERE e.team_id = n.team_id AND e.evidence_id = n.evidence_id;
ALTER TABLE evidence ALTER COLUMN doc SET DEFAULT nextval('evidence_doc');
ALTER TABLE evidence ALTER COLUMN doc SET NOT NULL;
CREATE UNIQUE INDEX evidence_by_doc ON evidence (team_id, doc);
GRANT USAGE ON SEQUENCE evidence_doc TO mnem_app;

-- The tsvector and its GIN index served only the old branch.
DROP TRIGGER evidence_terms ON evidence;
DROP FUNCTION mnem_evidence_terms();
DROP INDEX evidence_text;
ALTER TABLE evidence DROP COLUMN tsv;

-- A term's bounds over the team: the largest frequency and the shortest length among the
-- texts holding it (kept as the extremes ever counted: an erased text can leave them
-- loose, never wrong).
ALTER TABLE term_stats
    ADD COLUMN max_frequency bigint NOT NULL DEFAULT 0,
    ADD COLUMN min_length bigint NOT NULL DEFAULT 2147483647;
ALTER TABLE term_stats NO FORCE ROW LEVEL SECURITY;
ALTER TABLE term_stats DISABLE ROW LEVEL SECURITY;
UPDATE term_stats t SET max_frequency = s.max_frequency, min_length = s.min_length
FROM (SELECT e.team_id, k AS lexeme, max((e.term_freqs ->> k)::bigint) AS max_frequency,
             min(e.text_length) AS min_length
      FROM evidence e, jsonb_object_keys(e.term_freqs) AS k
      WHERE e.text_length > 0 GROUP BY e.team_id, k) s
WHERE t.team_id = s.team_id AND t.lexeme = s.lexeme;
ALTER TABLE term_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE term_stats FORCE ROW LEVEL SECURITY;
ALTER TABLE evidence ENABLE ROW LEVEL SECURITY;
ALTER TABLE evidence FORCE ROW LEVEL SECURITY;

-- Counted per statement as before (migration 0006), now with the bounds.
CREATE OR REPLACE FUNCTION mnem_evidence_term_stats_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO text_stats AS s (team_id, documents, lexemes)
    SELECT team_id, count(*), sum(text_length) FROM inserted
    WHERE text_length > 0 GROUP BY team_id ORDER BY team_id
    ON CONFLICT (team_id) DO UPDATE
        SET documents = s.documents + excluded.documents, lexemes = s.lexemes + excluded.lexemes;
    INSERT INTO term_stats AS t (team_id, lexeme, documents, max_frequency, min_length)
    SELECT i.team_id, k, count(*), max((i.term_freqs ->> k)::bigint), min(i.text_length)
    FROM inserted i, jsonb_object_keys(i.term_freqs) AS k
    WHERE i.text_length > 0 GROUP BY i.team_id, k ORDER BY i.team_id, k
    ON CONFLICT (team_id, lexeme) DO UPDATE SET documents = t.documents + excluded.documents,
        max_frequency = GREATEST(t.max_frequency, excluded.max_frequency),
        min_length = LEAST(t.min_length, excluded.min_length);
    RETURN NULL;
END
$$;

-- A block of a team's postings for a term, keyed by its last doc so a search seeks to the
-- block holding a doc; its summary beside the encoded postings. Written in the
-- evidence's transaction under the lock of the team's `text_stats` row, so a write is
-- searchable as soon as it commits and two writers never edit one block at once.
CREATE TABLE lexical_blocks (
    team_id       uuid NOT NULL,
    term          text NOT NULL,
    last_doc      bigint NOT NULL,
    first_doc     bigint NOT NULL,
    postings      integer NOT NULL,
    max_frequency integer NOT NULL,
    min_length    integer NOT NULL,
    data          bytea NOT NULL,
    PRIMARY KEY (team_id, term, last_doc)
);

ALTER TABLE lexical_blocks ENABLE ROW LEVEL SECURITY;
ALTER TABLE lexical_blocks FORCE ROW LEVEL SECURITY;
CREATE POLICY team_isolation ON lexical_blocks USING (team_id = mnem_team())
    WITH CHECK (team_id = mnem_team());
GRANT SELECT, INSERT, UPDATE, DELETE ON lexical_blocks TO mnem_app;

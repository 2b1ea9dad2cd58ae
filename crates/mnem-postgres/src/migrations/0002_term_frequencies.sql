-- BM25 without unnesting every matching document's tsvector: each row keeps its
-- lexemes' term frequencies (jsonb, looked up per query term in C) and its length, so
-- scoring a match costs a few key lookups. At 100k evidence, a common query term matches
-- tens of thousands of rows in a large team, and unnesting each one's tsvector
-- (`mnem_bm25`) took over half a second per recall.
--
-- One BEFORE trigger now derives all three from the content, so the text is parsed once
-- (the generated column parsed it, and the statistics trigger read it).

ALTER TABLE evidence ALTER COLUMN tsv DROP EXPRESSION;
ALTER TABLE evidence
    ADD COLUMN term_freqs jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN text_length bigint NOT NULL DEFAULT 0;

CREATE FUNCTION mnem_term_freqs(v tsvector) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(jsonb_object_agg(lexeme, COALESCE(cardinality(positions), 1)), '{}')
    FROM unnest(v)
$$;

CREATE FUNCTION mnem_evidence_text() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := to_tsvector('mnem_english', NEW.content);
    NEW.term_freqs := mnem_term_freqs(NEW.tsv);
    NEW.text_length := mnem_text_length(NEW.tsv);
    RETURN NEW;
END
$$;

CREATE TRIGGER evidence_text BEFORE INSERT OR UPDATE OF content ON evidence
    FOR EACH ROW EXECUTE FUNCTION mnem_evidence_text();

-- Rows written before this migration: the owner is subject to the forced policies too,
-- so they are lifted for the backfill (inside this migration's transaction) only.
ALTER TABLE evidence NO FORCE ROW LEVEL SECURITY;
ALTER TABLE evidence DISABLE ROW LEVEL SECURITY;
UPDATE evidence SET term_freqs = mnem_term_freqs(tsv), text_length = mnem_text_length(tsv);
ALTER TABLE evidence ENABLE ROW LEVEL SECURITY;
ALTER TABLE evidence FORCE ROW LEVEL SECURITY;

GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO mnem_app;

-- The per-row scorer of 0001 is replaced by the per-term expression the query builds.
DROP FUNCTION mnem_bm25(tsvector, text[], float8[], float8);

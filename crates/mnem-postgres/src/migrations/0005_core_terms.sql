-- Full text on mnem's own terms (mnem_core::lexical), as on SQLite: the application
-- writes each text's term frequencies and length with the evidence, and the tsvector (for
-- the GIN index) and the per-team statistics follow from them by trigger. Until now the
-- database parsed and stemmed text itself (its parser, Snowball), so a term could mean
-- something else here than on SQLite. The migration's Rust step fills both columns for
-- the texts already stored, which the statistics triggers then count.

DROP TRIGGER evidence_text ON evidence;
DROP TRIGGER evidence_text_stats_insert ON evidence;
DROP TRIGGER evidence_text_stats_change ON evidence;
DROP FUNCTION mnem_evidence_text();
DROP FUNCTION mnem_evidence_text_stats();
DROP FUNCTION mnem_count_text(uuid, tsvector, integer);
DROP FUNCTION mnem_term_freqs(tsvector);
DROP FUNCTION mnem_text_length(tsvector);

-- The lexemes of the GIN index are the keys of the term frequencies, as written.
CREATE FUNCTION mnem_evidence_terms() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := array_to_tsvector(ARRAY(SELECT jsonb_object_keys(NEW.term_freqs)));
    RETURN NEW;
END
$$;

CREATE TRIGGER evidence_terms BEFORE INSERT OR UPDATE OF term_freqs ON evidence
    FOR EACH ROW EXECUTE FUNCTION mnem_evidence_terms();

-- BM25 statistics per team, kept in the writer's transaction: documents with at least one
-- term and their total length, and each term's document frequency. A stored text counts
-- (retracted too) until it is erased, as on SQLite.
CREATE FUNCTION mnem_count_terms(team uuid, freqs jsonb, length bigint, sign integer)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO text_stats AS s (team_id, documents, lexemes)
    VALUES (team, sign, sign * length)
    ON CONFLICT (team_id) DO UPDATE
        SET documents = s.documents + excluded.documents, lexemes = s.lexemes + excluded.lexemes;
    INSERT INTO term_stats AS t (team_id, lexeme, documents)
    SELECT team, k, sign FROM jsonb_object_keys(freqs) AS k ORDER BY k
    ON CONFLICT (team_id, lexeme) DO UPDATE SET documents = t.documents + excluded.documents;
$$;

CREATE FUNCTION mnem_evidence_term_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.text_length > 0 THEN
        PERFORM mnem_count_terms(OLD.team_id, OLD.term_freqs, OLD.text_length, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.text_length > 0 THEN
        PERFORM mnem_count_terms(NEW.team_id, NEW.term_freqs, NEW.text_length, 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER evidence_term_stats_insert AFTER INSERT ON evidence
    FOR EACH ROW EXECUTE FUNCTION mnem_evidence_term_stats();
CREATE TRIGGER evidence_term_stats_change AFTER UPDATE OF term_freqs, text_length ON evidence
    FOR EACH ROW
    WHEN (OLD.term_freqs IS DISTINCT FROM NEW.term_freqs
          OR OLD.text_length IS DISTINCT FROM NEW.text_length)
    EXECUTE FUNCTION mnem_evidence_term_stats();

-- Start from nothing: the Rust step re-derives every stored text's terms, and the
-- triggers above count them. (TRUNCATE is not subject to row-level security.)
TRUNCATE text_stats, term_stats;
ALTER TABLE evidence NO FORCE ROW LEVEL SECURITY;
ALTER TABLE evidence DISABLE ROW LEVEL SECURITY;
ALTER TABLE evidence DISABLE TRIGGER evidence_term_stats_change;
UPDATE evidence SET term_freqs = '{}', text_length = 0;
ALTER TABLE evidence ENABLE TRIGGER evidence_term_stats_change;
ALTER TABLE evidence ENABLE ROW LEVEL SECURITY;
ALTER TABLE evidence FORCE ROW LEVEL SECURITY;

GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO mnem_app;

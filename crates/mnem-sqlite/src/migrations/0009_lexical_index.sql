-- Full text on mnem's own terms (mnem_core::lexical): per-team posting lists and
-- statistics, written with the evidence and scored by the core's BM25, so both backends
-- mean the same by a term and compute the same relevance. This replaces `evidence_fts`,
-- whose bm25() took its statistics from every team's texts in the file and whose
-- tokenizer and stemmer were not PostgreSQL's. The migration's Rust step indexes the
-- texts already stored.

ALTER TABLE evidence ADD COLUMN text_length INTEGER NOT NULL DEFAULT 0;

-- Per team: documents with at least one term, and their terms in all (BM25's N and
-- average length). Stored texts count until they are erased.
CREATE TABLE lexical_stats (
    team_id      BLOB PRIMARY KEY,
    documents    INTEGER NOT NULL,
    total_length INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- FTS5 stays the inverted index (its segments make a write a few pages, where a B-tree
-- of postings dirtied a page per distinct term), but over the core's terms, each
-- prefixed with its team's id: every team has posting lists and document counts of its
-- own. Contentless (rowid = evidence doc); the `ascii` tokenizer splits only where the
-- writer put spaces, since every term is letters, digits and marks.
CREATE VIRTUAL TABLE lexical_fts USING fts5 (terms, content = '', tokenize = 'ascii');
-- A term's occurrences (doc, per occurrence: its term frequency by counting) and its
-- document count.
CREATE VIRTUAL TABLE lexical_instances USING fts5vocab (lexical_fts, instance);
CREATE VIRTUAL TABLE lexical_rows USING fts5vocab (lexical_fts, row);

DROP TABLE evidence_fts;

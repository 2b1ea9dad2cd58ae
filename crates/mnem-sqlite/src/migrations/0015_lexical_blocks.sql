-- Full text as block posting lists (mnem_core::lexical::blocks), replacing the FTS5
-- index of 0009. FTS5 could only be read a posting at a time, each joined to `evidence`
-- for its eligibility, so a query of common words walked every posting of every term
-- (p95 45 ms at 100k texts). Blocks of 128 postings with a score bound beside them let
-- the core's top-k (mnem_core::lexical::topk) skip what cannot reach the pool and ask
-- about eligibility only for what can. The migration's Rust step rebuilds the index and
-- the statistics from the stored texts.

DROP TABLE lexical_rows;
DROP TABLE lexical_instances;
DROP TABLE lexical_fts;
DELETE FROM lexical_stats;
UPDATE evidence SET text_length = 0;

-- A term of a team: the documents holding it (its idf), and the largest frequency and the
-- shortest length among them, which bound what it adds to any document (kept as the
-- extremes ever indexed: an erased text can leave them loose, never wrong).
CREATE TABLE lexical_terms (
    team_id       BLOB NOT NULL,
    term          TEXT NOT NULL,
    documents     INTEGER NOT NULL,
    max_frequency INTEGER NOT NULL,
    min_length    INTEGER NOT NULL,
    PRIMARY KEY (team_id, term)
) STRICT, WITHOUT ROWID;

-- A block of a team's postings for a term, keyed by its last doc so a search seeks to the
-- block holding a doc; its summary beside the encoded postings.
CREATE TABLE lexical_blocks (
    team_id       BLOB NOT NULL,
    term          TEXT NOT NULL,
    last_doc      INTEGER NOT NULL,
    first_doc     INTEGER NOT NULL,
    postings      INTEGER NOT NULL,
    max_frequency INTEGER NOT NULL,
    min_length    INTEGER NOT NULL,
    data          BLOB NOT NULL,
    PRIMARY KEY (team_id, term, last_doc)
) STRICT, WITHOUT ROWID;

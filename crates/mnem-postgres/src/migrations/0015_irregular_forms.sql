-- The analyzer joins irregular word forms to their word ("made" → "make", "went" → "go";
-- mnem_core::lexical). Every stored text's terms are derived again by the migration's
-- Rust step; the statistics and the block posting lists are emptied here, recounted from
-- the new terms and rebuilt (as 0013 built them). The per-row statistics trigger stays
-- off while the terms are rewritten: the recount replaces what it would have done one
-- row at a time. (TRUNCATE is not subject to row-level security.)

TRUNCATE text_stats, term_stats, lexical_blocks;
ALTER TABLE evidence DISABLE TRIGGER evidence_term_stats_change;

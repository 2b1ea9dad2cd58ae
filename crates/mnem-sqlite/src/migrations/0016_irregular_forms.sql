-- The analyzer joins irregular word forms to their word ("made" → "make", "went" → "go";
-- mnem_core::lexical). Terms stored before were made without that, and SQLite re-derives
-- a text's terms to take it out of the index when it is erased, so every text is
-- re-indexed: the index and the statistics are emptied here and the migration's Rust
-- step rebuilds them from the stored texts (as 0015 did).

DELETE FROM lexical_blocks;
DELETE FROM lexical_terms;
DELETE FROM lexical_stats;
UPDATE evidence SET text_length = 0;

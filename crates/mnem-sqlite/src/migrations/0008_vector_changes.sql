-- The persisted vector index (src/ann.rs) catches up from a per-team change sequence
-- rather than from `updated_at`: a clock can go backwards and a transaction can commit
-- after a later-stamped one, but SQLite runs one writer at a time, so a sequence read
-- from the table inside the writing transaction only ever grows in commit order.
ALTER TABLE search_documents ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE graph_documents ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;

-- Any distinct positive numbers will do for rows written before: no index has seen them.
UPDATE search_documents SET change_seq = doc;
UPDATE graph_documents SET change_seq = doc;

CREATE INDEX search_documents_by_change ON search_documents (team_id, change_seq);
CREATE INDEX graph_documents_by_change ON graph_documents (team_id, change_seq);

-- The updated_at catch-up these served is gone.
DROP INDEX search_documents_changed;
DROP INDEX graph_documents_changed;

-- Every insert, and every change of what the index holds, takes the team's next number.
-- The triggers' own UPDATE sets only change_seq, so it does not fire them again.
CREATE TRIGGER search_documents_seq_insert AFTER INSERT ON search_documents BEGIN
    UPDATE search_documents SET change_seq = (
        SELECT COALESCE(MAX(change_seq), 0) + 1 FROM search_documents
        WHERE team_id = NEW.team_id
    ) WHERE doc = NEW.doc;
END;
CREATE TRIGGER search_documents_seq_update AFTER UPDATE OF state, contract, vector
ON search_documents BEGIN
    UPDATE search_documents SET change_seq = (
        SELECT COALESCE(MAX(change_seq), 0) + 1 FROM search_documents
        WHERE team_id = NEW.team_id
    ) WHERE doc = NEW.doc;
END;
CREATE TRIGGER graph_documents_seq_insert AFTER INSERT ON graph_documents BEGIN
    UPDATE graph_documents SET change_seq = (
        SELECT COALESCE(MAX(change_seq), 0) + 1 FROM graph_documents
        WHERE team_id = NEW.team_id
    ) WHERE doc = NEW.doc;
END;
CREATE TRIGGER graph_documents_seq_update AFTER UPDATE OF state, contract, vector
ON graph_documents BEGIN
    UPDATE graph_documents SET change_seq = (
        SELECT COALESCE(MAX(change_seq), 0) + 1 FROM graph_documents
        WHERE team_id = NEW.team_id
    ) WHERE doc = NEW.doc;
END;

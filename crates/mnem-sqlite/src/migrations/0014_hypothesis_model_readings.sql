-- The optional chat model's reading of a hypothesis, written once beside the rule's
-- statement (which stays the record). model_read_at is set by every reading, usable or
-- not, so a pass never asks the model about the same hypothesis twice.
ALTER TABLE hypotheses ADD COLUMN model_name TEXT;
ALTER TABLE hypotheses ADD COLUMN model_read_at INTEGER;
ALTER TABLE hypotheses ADD COLUMN model_statement TEXT;
ALTER TABLE hypotheses ADD COLUMN model_plausibility REAL;

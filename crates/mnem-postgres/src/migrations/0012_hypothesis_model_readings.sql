-- The optional chat model's reading of a hypothesis, written once beside the rule's
-- statement (which stays the record). model_read_at is set by every reading, usable or
-- not, so a pass never asks the model about the same hypothesis twice. The table's team
-- policy covers the new columns.
ALTER TABLE hypotheses
    ADD COLUMN model_name text,
    ADD COLUMN model_read_at bigint,
    ADD COLUMN model_statement text,
    ADD COLUMN model_plausibility double precision;

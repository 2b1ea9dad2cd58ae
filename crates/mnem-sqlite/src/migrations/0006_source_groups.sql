-- Evidence windows read a hit's neighbours in its source group in group order
-- (observed_at, then id), starting from the hit's position: one index walk per side.
CREATE INDEX evidence_by_group ON evidence (team_id, source_key, observed_at, evidence_id)
    WHERE source_key IS NOT NULL;

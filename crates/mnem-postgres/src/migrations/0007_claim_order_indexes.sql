-- The embedding queue's indexes hold the orders it is claimed in: evidence before
-- discovery documents, then oldest first (a worker) or, within one team, newest first (a
-- one-shot command's own write). The index on `enqueued_at` alone could not serve the
-- kind-first order, so every claim sorted every pending job (with 920k pending a claim
-- of 256 was seen running 0.62 s; the indexed form reads 256 rows in 0.33 ms).

DROP INDEX search_jobs_pending;
CREATE INDEX search_jobs_pending ON search_jobs
    ((target_kind <> 'evidence'), enqueued_at, target_id) WHERE state = 'pending';
CREATE INDEX search_jobs_team_pending ON search_jobs
    (team_id, (target_kind <> 'evidence'), enqueued_at DESC, target_id DESC)
    WHERE state = 'pending';

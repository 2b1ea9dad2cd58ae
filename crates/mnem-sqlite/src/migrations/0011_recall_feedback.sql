-- Recall feedback: what a client reported about one recall (query, results with ranks,
-- judgments). A record only: nothing reads it while ranking.
CREATE TABLE recall_feedback (
    team_id         BLOB NOT NULL,
    feedback_id     BLOB NOT NULL,
    profile_id      BLOB NOT NULL,
    submitted_at    INTEGER NOT NULL,
    ranking_profile TEXT NOT NULL,
    query           TEXT NOT NULL,
    PRIMARY KEY (team_id, feedback_id)
) WITHOUT ROWID;

CREATE TABLE recall_feedback_results (
    team_id     BLOB NOT NULL,
    feedback_id BLOB NOT NULL,
    rank        INTEGER NOT NULL,
    evidence_id BLOB NOT NULL,
    judgment    TEXT,
    PRIMARY KEY (team_id, feedback_id, rank)
) WITHOUT ROWID;

-- An item's usage (`mnem show`) counts its rows here.
CREATE INDEX feedback_by_evidence ON recall_feedback_results (team_id, evidence_id);
